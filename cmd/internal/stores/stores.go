// Package stores wires every way of keeping a conversation into Link
// Harness's programs, in one switch, so a store package never registers
// itself and the programs agree on how a folder is read.
package stores

import (
	"lnk.dev/linkharness/store"
	eventlog "lnk.dev/linkharness/store/log"
)

// Open opens the conversation in folder dir the way the folder says it is
// kept; kind, the spec's [storage] conversations, says how one with nothing
// in it yet starts.
func Open(dir, kind string) (store.Conversation, error) {
	if c, ok, err := openDriver(dir, kind); ok {
		return c, err
	}
	return eventlog.Open(dir)
}
