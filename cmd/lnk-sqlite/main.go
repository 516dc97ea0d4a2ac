// Command lnk-sqlite is the store driver keeping every conversation of an
// agent in chats/events.sqlite. Link Harness starts it with the agent's
// home and speaks the driver protocol on its standard input and output
// (FORMATS.md, "Store drivers"); it ends when its input does.
//
//	lnk-sqlite --home DIR
//
// A signal ends it at once, which loses nothing: every write is a
// transaction that either committed, durably, or did not happen.
package main

import (
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/sqlite"
)

func main() { driver.Main("lnk-sqlite", open) }

// open opens the agent's chats/events.sqlite, making its folder.
func open(dir string) (store.Driver, error) {
	path, err := home.Agent{Dir: dir}.Path(home.SQLite, "")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return sqlite.Open(path)
}
