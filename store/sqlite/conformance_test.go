package sqlite_test

import (
	"testing"

	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunFile(t, sqlite.FileName, sqlite.Open)
}
