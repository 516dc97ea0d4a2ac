package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

// A file made before with the mode SQLite gives (0644) is made its
// owner's alone when opened, and the -wal and -shm beside it follow it.
func TestOpenMakesAnOldFilePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	d, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.Open("t")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(context.Background(), 1, storetest.Event("t", 1, 0)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), perm)
		}
	}
}
