package pebble_test

import (
	"testing"

	"lnk.dev/linkharness/store/pebble"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.RunFile(t, pebble.DirName, pebble.Open)
}
