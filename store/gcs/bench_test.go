package gcs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens thread "t" of a new agent holding n typical events, put in
// the fake directly, named as the driver names them. The fake, unlike
// Cloud Storage, copies and sorts its whole bucket for every listing, so
// Last (and with it a backward read) costs as much as the bucket is big:
// these are the fake's figures at 1,000 events, not a bucket's.
func filled(b *testing.B, n int64) store.Conversation {
	dir := b.TempDir()
	d := open(b, dir)
	prefix := "lnk/" + agentOf(dir) + "/events/t/"
	for seq := int64(1); seq <= n; seq++ {
		fake().CreateObject(fakestorage.Object{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: prefix + fmt.Sprintf("%018d.%d", 999_999_999_999_999_999-seq, seq)},
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

// BenchmarkReadLast32 reads the tail of 1,000 events: one listing of one
// name, then 32 reads at once.
func BenchmarkReadLast32(b *testing.B) {
	storetest.BenchReadLast32(b, filled(b, 1000))
}
