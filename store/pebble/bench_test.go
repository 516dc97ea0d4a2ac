package pebble

import (
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens thread "t" of a new database holding n typical events, written
// in one batch so a long conversation is quick to make.
func filled(b *testing.B, n int64) store.Conversation {
	d, err := Open(filepath.Join(b.TempDir(), DirName))
	c := storetest.OpenThread(b, d, err, "t")
	keys := c.(*Conversation)
	batch := d.db.NewBatch()
	for seq := int64(1); seq <= n; seq++ {
		if err := batch.Set(keys.eventKey(nil, seq), storetest.TypicalEvent(seq), nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		b.Fatal(err)
	}
	if err := d.db.Flush(); err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchAppend(b, filled(b, 0), 0)
}

func BenchmarkReadLast32(b *testing.B) {
	storetest.BenchReadLast32Sizes(b, filled)
}
