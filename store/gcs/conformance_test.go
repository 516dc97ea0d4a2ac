package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/googleapi"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/gcs"
	"lnk.dev/linkharness/store/storetest"
)

const bucket = "lnk-test"

// fake is the tests' Cloud Storage: fake-gcs-server in this process, its
// objects in memory, shared by every test, each test's store under an
// agent of its own.
var fake = sync.OnceValue(func() *fakestorage.Server {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true})
	if err != nil {
		panic(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return srv
})

func open(tb testing.TB, dir string) *gcs.Driver {
	d, err := gcs.Open(fake().Client(), bucket, "lnk/", storetest.Agent(dir), false)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// TestFakeRefusesTakenName proves the fake keeps the preconditions every
// other test leans on, so none of them passes by accident: a name taken is
// refused with ifGenerationMatch=0, and a replace of another generation
// than the one there is refused. The races between processes run against
// the fake with its objects in files, which proves the same of itself
// (served).
func TestFakeRefusesTakenName(t *testing.T) {
	refusesTaken(t, fake().Client())
}

func refusesTaken(t *testing.T, client *storage.Client) {
	t.Helper()
	ctx := context.Background()
	o := client.Bucket(bucket).Object("fake-test/taken")
	write := func(conds storage.Conditions, data string) (*storage.ObjectAttrs, error) {
		w := o.If(conds).NewWriter(ctx)
		w.ChunkSize = 0
		w.Write([]byte(data))
		err := w.Close()
		return w.Attrs(), err
	}
	first, err := write(storage.Conditions{DoesNotExist: true}, "first")
	if err != nil {
		t.Fatalf("a free name: %v", err)
	}
	_, err = write(storage.Conditions{DoesNotExist: true}, "second")
	if !is412(err) {
		t.Fatalf("a taken name with ifGenerationMatch=0: %v, want 412", err)
	}
	_, err = write(storage.Conditions{GenerationMatch: first.Generation + 1}, "third")
	if !is412(err) {
		t.Fatalf("a replace of a generation not there: %v, want 412", err)
	}
	r, err := o.NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got bytes.Buffer
	got.ReadFrom(r)
	if got.String() != "first" {
		t.Fatalf("the object holds %q after refused writes", got.String())
	}
	second, err := write(storage.Conditions{GenerationMatch: first.Generation}, "fourth")
	if err != nil {
		t.Fatalf("a replace of the generation there: %v", err)
	}
	if _, err := write(storage.Conditions{GenerationMatch: first.Generation}, "fifth"); !is412(err) {
		t.Fatalf("a replace of the generation replaced: %v, want 412", err)
	}
	if second.Generation == first.Generation {
		t.Fatalf("a replace kept generation %d", first.Generation)
	}
}

func is412(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return open(t, dir) })
}
