// Command lnk-pebble is the store driver keeping every conversation of an
// agent in one pebble database, the folder chats/events.pebble. Link
// Harness starts it with the agent's home and speaks the driver protocol on
// its standard input and output (FORMATS.md, "Store drivers"); it ends when
// its input does. Pebble locks its folder, so one lnk-pebble at a time
// keeps an agent's conversations.
//
//	lnk-pebble --home DIR
//
// A signal ends it at once, which loses nothing: every write is synced to
// pebble's log before it is answered.
package main

import (
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/pebble"
)

func main() { driver.Main("lnk-pebble", open) }

// open opens the agent's chats/events.pebble, making its folder.
func open(dir string) (store.Driver, error) {
	chats, err := home.Agent{Dir: dir}.Path(home.Chats, "")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(chats, 0o700); err != nil {
		return nil, err
	}
	return pebble.Open(filepath.Join(chats, pebble.DirName))
}
