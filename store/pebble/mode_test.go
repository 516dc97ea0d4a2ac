package pebble_test

import (
	"testing"

	"lnk.dev/linkharness/store/pebble"
	"lnk.dev/linkharness/store/storetest"
)

// A database folder made before with pebble's mode (0755) is made its
// owner's alone when opened.
func TestOpenMakesAnOldFolderPrivate(t *testing.T) {
	_, dir := storetest.ReopenWithMode(t, pebble.DirName, 0o755, pebble.Open)
	storetest.WantMode(t, 0o700, dir)
}
