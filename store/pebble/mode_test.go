package pebble_test

import (
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store/pebble"
)

// A database folder made before with pebble's mode (0755) is made its
// owner's alone when opened.
func TestOpenMakesAnOldFolderPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), pebble.DirName)
	d, err := pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err = pebble.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("%s has mode %v, want 0700", pebble.DirName, perm)
	}
}
