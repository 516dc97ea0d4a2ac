package gcs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/gcs"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens thread "t" of a new agent holding n typical events, put in
// the fake directly, named as the driver names them. The fake keeps its
// objects in files in memory (storetest.MemDir) and answers in this
// process: its in-memory bucket finds an object by formatting and comparing
// the name of every object it holds, so its figures would grow with the
// bucket, where a file is found by its path. What is measured is the
// driver, the client library and the fake's HTTP handling, with no network
// between them: a bucket adds a round trip of tens of milliseconds a call.
func filled(b *testing.B, n int64) store.Conversation {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, StorageRoot: storetest.MemDir(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	d, err := gcs.Open(srv.Client(), bucket, "lnk/", "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	for seq := int64(1); seq <= n; seq++ {
		srv.CreateObject(fakestorage.Object{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: "lnk/bench/events/t/" + fmt.Sprintf("%018d.%d", 999_999_999_999_999_999-seq, seq)},
			Content:     storetest.TypicalEvent(seq),
		})
	}
	c, err := d.Open("t")
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAppend appends to a conversation of 1,000 events: a lease read
// and a conditional write, the conversation having seen its last seq.
func BenchmarkAppend(b *testing.B) {
	const n = 1000
	c := filled(b, n)
	if last, err := c.Last(context.Background()); err != nil || last != n {
		b.Fatal(last, err)
	}
	storetest.BenchAppend(b, c, n)
}

// BenchmarkReadLast32 reads the tail of n events as a turn does once it
// holds the lease, which gave it the last seq its writer saw: Last (one
// missing object's metadata), then 32 reads at once. The Conversation has
// seen the last seq before the loop, so its one listing is not counted.
// Filling the fake through its files takes about half a millisecond an
// event, so the longest conversation is 10,000 events.
func BenchmarkReadLast32(b *testing.B) {
	for _, n := range []int64{1000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := filled(b, n)
			if last, err := c.Last(context.Background()); err != nil || last != n {
				b.Fatal(last, err)
			}
			storetest.BenchReadLast32(b, c)
		})
	}
}
