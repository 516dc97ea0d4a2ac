package compact_test

import (
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		return storetest.Folders(dir, func(dir string) (store.Conversation, error) { return compact.Open(dir) })
	})
}
