package compact_test

import (
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/internal/disk/disktest"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		return storetest.Folders(dir, func(dir string) (store.Conversation, error) { return compact.Open(dir) })
	})
}

// TestConformanceMem runs the suite with the conversations kept on a
// disk.Mem.
func TestConformanceMem(t *testing.T) {
	disktest.Conformance(t, func(fsys disk.FS, dir string) (store.Conversation, error) {
		return compact.OpenOptions(dir, compact.Options{FS: fsys})
	})
}
