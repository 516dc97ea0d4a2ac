package sqlite

import (
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens thread "t" of a new file holding n typical events, written
// in one transaction so a long conversation is quick to make.
func filled(b *testing.B, n int64) store.Conversation {
	d, err := Open(filepath.Join(b.TempDir(), FileName))
	c := storetest.OpenThread(b, d, err, "t")
	tx, err := d.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for seq := int64(1); seq <= n; seq++ {
		if _, err := tx.Exec(`INSERT INTO events (thread, seq, event) VALUES ('t', ?, ?)`, seq, string(storetest.TypicalEvent(seq))); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
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
