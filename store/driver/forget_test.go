package driver_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/storetest"
)

// forgetting keeps the log in folders and forgets a conversation by
// removing its folder.
type forgetting struct {
	store.Driver
	root string
}

func (f forgetting) Open(thread string) (store.Conversation, error) {
	c, err := f.Driver.Open(thread)
	return forgettingConv{c, filepath.Join(f.root, thread)}, err
}

type forgettingConv struct {
	store.Conversation
	dir string
}

func (c forgettingConv) Forget(context.Context) error { return os.RemoveAll(c.dir) }

// TestForgetCall calls forget over HTTP: a driver that forgets forgets the
// thread named, and one that cannot answers store.ErrUnsupported.
func TestForgetCall(t *testing.T) {
	ctx := context.Background()
	key := []byte("agent-key")
	for _, can := range []bool{true, false} {
		root := t.TempDir()
		var d store.Driver = logs(root)
		if can {
			d = forgetting{d, root}
		}
		srv := httptest.NewServer(driver.Handler(d, key))
		defer srv.Close()
		cl := driver.New(driver.NewHTTP(srv.URL, key, srv.Client()))
		for _, th := range []string{"a", "b"} {
			c, _ := cl.Open(th)
			if err := c.Append(ctx, 1, storetest.Event(th, 1, 0)); err != nil {
				t.Fatal(err)
			}
		}
		a, _ := cl.Open("a")
		err := a.(store.Forgetter).Forget(ctx)
		if !can {
			if !errors.Is(err, store.ErrUnsupported) {
				t.Fatalf("forget by a driver without it: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "a")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a was not forgotten: %v", err)
		}
		b, _ := cl.Open("b")
		if n, err := b.Last(ctx); err != nil || n != 1 {
			t.Fatalf("b: last %d, %v", n, err)
		}
	}
}
