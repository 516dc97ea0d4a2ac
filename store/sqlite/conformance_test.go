package sqlite_test

import (
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		d, err := sqlite.Open(filepath.Join(dir, sqlite.FileName))
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}
