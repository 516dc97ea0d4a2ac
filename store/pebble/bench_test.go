package pebble

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens a new file holding n typical events in thread "t", written
// in one transaction so a long conversation is quick to make.
func filled(tb testing.TB, n int64) *Driver {
	d, err := Open(filepath.Join(tb.TempDir(), DirName))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	c := &Conversation{d: d, thread: "t"}
	batch := d.db.NewBatch()
	for seq := int64(1); seq <= n; seq++ {
		if err := batch.Set(c.eventKey(nil, seq), storetest.TypicalEvent(seq), nil); err != nil {
			tb.Fatal(err)
		}
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		tb.Fatal(err)
	}
	if err := d.db.Flush(); err != nil {
		tb.Fatal(err)
	}
	return d
}

func BenchmarkAppend(b *testing.B) {
	c, _ := filled(b, 0).Open("t")
	storetest.BenchAppend(b, c, 0)
}

func BenchmarkReadLast32(b *testing.B) {
	storetest.BenchReadLast32Sizes(b, func(b *testing.B, n int64) store.Conversation {
		c, _ := filled(b, n).Open("t")
		return c
	})
}
