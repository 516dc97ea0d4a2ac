package gcs_test

import (
	"context"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/gcs"
	"lnk.dev/linkharness/store/storetest"
)

// served starts fake-gcs-server listening on loopback, so other processes
// reach it, and points the Cloud Storage client at it through
// STORAGE_EMULATOR_HOST, which the child processes inherit. In a child it
// does nothing: the parent's server is the one. Its objects are files in a
// folder of the test's: the fake's in-memory bucket finds an object by
// formatting the name of each object it holds (fmt.Sprintf) and comparing,
// so each request costs as much as the bucket is big and a race of 10,000
// turns would not end; kept in files, an object is found by its path. The
// file-backed fake is first proved to refuse a taken name.
func served(t *testing.T) {
	if storetest.IsChild() {
		return
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", StorageRoot: storetest.MemDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	refusesTaken(t, srv.Client())
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
}

// sharedConv opens conversation "race" of dir's agent through a client of
// the served fake, as each process racing on it does. Reads go through
// the JSON API, as the fake's own client sends them: its XML API answers
// only requests addressed to its public host name.
func sharedConv(t *testing.T, dir string) store.Conversation {
	client, err := storage.NewClient(context.Background(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	d, err := gcs.Open(client, bucket, "lnk/", storetest.Agent(dir), true)
	return storetest.OpenThread(t, d, err, "race")
}

// TestRaceTurns has two processes race turns on one conversation in one
// bucket (storetest.RaceTurns), both reaching the fake over HTTP.
func TestRaceTurns(t *testing.T) {
	served(t)
	n := storetest.RaceLength()
	if raceEnabled {
		n = min(n, storetest.FullRace/10)
	}
	storetest.RaceTurns(t, sharedConv, n)
}

// TestStoppedHolder stops a lease holder past its time to live
// (storetest.StoppedHolder). A call to Cloud Storage holds nothing
// between requests, so the holder may be stopped anywhere.
func TestStoppedHolder(t *testing.T) {
	served(t)
	storetest.StoppedHolder(t, sharedConv, nil)
}
