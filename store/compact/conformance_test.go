package compact_test

import (
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		return storetest.Folders(dir, func(dir string) (store.Conversation, error) { return compact.Open(dir) })
	})
}

// TestConformanceMem runs the suite with the conversations kept on a
// disk.Mem, one per store, so the crash and fault tests' filesystem is
// known to keep a compact conversation as the disk does.
func TestConformanceMem(t *testing.T) {
	mems := make(map[string]*disk.Mem)
	storetest.Run(t, func(t *testing.T, root string) store.Driver {
		m := mems[root]
		if m == nil {
			m = disk.NewMem()
			mems[root] = m
		}
		return storetest.Folders(root, func(dir string) (store.Conversation, error) {
			if err := m.MkdirAll(dir); err != nil {
				return nil, err
			}
			return compact.OpenOptions(dir, compact.Options{FS: m})
		})
	})
}
