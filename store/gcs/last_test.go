package gcs_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/gcs"
	"lnk.dev/linkharness/store/storetest"
)

// counting counts the requests a client sends, by kind: a listing of a
// folder's objects, or anything else.
type counting struct {
	mu            sync.Mutex
	lists, others int
	next          http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/o") {
		c.lists++
	} else {
		c.others++
	}
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *counting) take() (lists, others int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lists, others, c.lists, c.others = c.lists, c.others, 0, 0
	return lists, others
}

// Last finds the last seq by asking for the object after the one it knows,
// from the lease when it knows none, and lists only with no start or more
// than a few written since.
func TestLastAsksForTheNext(t *testing.T) {
	served(t)
	ctx := context.Background()
	dir := t.TempDir()
	writer := sharedConv(t, dir)
	appendTo := func(to int64) {
		t.Helper()
		token, err := writer.(store.Leaser).Lease(ctx, "writer", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		last, err := writer.Last(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := last + 1; seq <= to; seq++ {
			if err := writer.(store.Leaser).AppendLeased(ctx, seq, storetest.TypicalEvent(seq), token); err != nil {
				t.Fatal(err)
			}
		}
		if err := writer.(store.Leaser).Release(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	reader := func() (store.Conversation, *counting) {
		n := &counting{next: http.DefaultTransport}
		client, err := storage.NewClient(ctx, storage.WithJSONReads(), option.WithHTTPClient(&http.Client{Transport: n}))
		if err != nil {
			t.Fatal(err)
		}
		d, err := gcs.Open(client, bucket, "lnk/", storetest.Agent(dir), true)
		return storetest.OpenThread(t, d, err, "race"), n
	}
	last := func(c store.Conversation, n *counting, want int64, lists, others int) {
		t.Helper()
		n.take()
		got, err := c.Last(ctx)
		if err != nil || got != want {
			t.Fatalf("Last = %d, %v; want %d", got, err, want)
		}
		if l, o := n.take(); l != lists || o != others {
			t.Errorf("Last of %d made %d listings and %d other requests; want %d and %d", want, l, o, lists, others)
		}
	}

	appendTo(5)
	fresh, n := reader()
	last(fresh, n, 5, 1, 0) // nothing known: one listing
	last(fresh, n, 5, 0, 1) // 5 known: seq 6 is missing

	taker, tn := reader()
	token, err := taker.(store.Leaser).Lease(ctx, "taker", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	last(taker, tn, 5, 0, 1) // the lease said 5
	taker.(store.Leaser).Release(ctx, token)

	appendTo(7)
	last(fresh, n, 7, 0, 3) // 6 and 7 there, 8 missing
	appendTo(20)
	last(fresh, n, 20, 1, 4) // four found, then one listing
}
