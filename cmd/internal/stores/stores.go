// Package stores wires every way of keeping a conversation into Link
// Harness's programs, in one switch, so a store package never registers
// itself and the programs agree on how a folder is read.
package stores

import (
	"os"
	"path/filepath"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/perevent"
)

// Open opens the conversation in folder dir the way the folder says it is
// kept; kind, the spec's [storage] conversations, says how one with nothing
// in it yet starts.
func Open(dir, kind string) (store.Conversation, error) {
	if c, ok, err := openDriver(dir, kind); ok {
		return c, err
	}
	switch {
	case exists(filepath.Join(dir, compact.FramesName)):
		return compact.Open(dir)
	case perevent.Is(dir):
		return perevent.Open(dir) // the form before the log, read only
	case kind == "compact" && isNew(dir):
		return compact.Open(dir)
	}
	return eventlog.Open(dir)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
