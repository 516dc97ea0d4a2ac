package storetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
)

// ReopenWithMode opens a new store, name in t's temporary folder, with
// open, closes it, gives it mode perm, as an older program or the store's
// library left it, and opens it again, closed at the test's end: what a
// store does to a file or folder made before it kept them private. It
// returns the store and its path.
func ReopenWithMode[D store.Driver](t testing.TB, name string, perm fs.FileMode, open func(path string) (D, error)) (D, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	d, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	d, err = open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

// WantMode fails t for each of paths whose permission bits are not perm.
func WantMode(t testing.TB, perm fs.FileMode, paths ...string) {
	t.Helper()
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != perm {
			t.Errorf("%s has mode %v, want %#o", filepath.Base(p), got, perm)
		}
	}
}
