package sqlite

import (
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens a new file holding n typical events in thread "t", written
// in one transaction so a long conversation is quick to make.
func filled(tb testing.TB, n int64) *Driver {
	d, err := Open(filepath.Join(tb.TempDir(), FileName))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	tx, err := d.db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	for seq := int64(1); seq <= n; seq++ {
		if _, err := tx.Exec(`INSERT INTO events (thread, seq, event) VALUES ('t', ?, ?)`, seq, string(storetest.TypicalEvent(seq))); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
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
