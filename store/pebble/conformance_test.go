package pebble_test

import (
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/pebble"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		d, err := pebble.Open(filepath.Join(dir, pebble.DirName))
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}
