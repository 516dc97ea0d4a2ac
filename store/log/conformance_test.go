package log_test

import (
	"testing"

	"lnk.dev/linkharness/store"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		return storetest.Folders(dir, func(dir string) (store.Conversation, error) { return eventlog.Open(dir) })
	})
}
