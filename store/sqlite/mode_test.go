package sqlite_test

import (
	"context"
	"testing"

	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

// A file made before with the mode SQLite gives (0644) is made its
// owner's alone when opened, and the -wal and -shm beside it follow it.
func TestOpenMakesAnOldFilePrivate(t *testing.T) {
	d, path := storetest.ReopenWithMode(t, sqlite.FileName, 0o644, sqlite.Open)
	c, err := d.Open("t")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(context.Background(), 1, storetest.Event("t", 1, 0)); err != nil {
		t.Fatal(err)
	}
	storetest.WantMode(t, 0o600, path, path+"-wal", path+"-shm")
}
