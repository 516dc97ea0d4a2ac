// Command lnk-pebble is the store driver keeping every conversation of an
// agent in one pebble database, the folder chats/events.pebble. Link
// Harness starts it with the agent's home and speaks the driver protocol on
// its standard input and output (DESIGN.md, "Store drivers"); it ends when
// its input does. Pebble locks its folder, so one lnk-pebble at a time
// keeps an agent's conversations.
//
//	lnk-pebble --home DIR
//
// A signal ends it at once, which loses nothing: every write is synced to
// pebble's log before it is answered.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/pebble"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lnk-pebble:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("lnk-pebble", flag.ContinueOnError)
	dir := fs.String("home", "", "the agent's home folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--home is needed")
	}
	chats, err := home.Agent{Dir: *dir}.Path(home.Chats, "")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(chats, 0o700); err != nil {
		return err
	}
	d, err := pebble.Open(filepath.Join(chats, pebble.DirName))
	if err != nil {
		return err
	}
	serr := driver.Serve(context.Background(), d, os.Stdin, os.Stdout)
	if err := d.Close(); serr == nil {
		serr = err
	}
	return serr
}
