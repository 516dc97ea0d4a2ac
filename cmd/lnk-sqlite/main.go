// Command lnk-sqlite is the store driver keeping every conversation of an
// agent in chats/events.sqlite. Link Harness starts it with the agent's
// home and speaks the driver protocol on its standard input and output
// (DESIGN.md, "Store drivers"); it ends when its input does.
//
//	lnk-sqlite --home DIR
//
// A signal ends it at once, which loses nothing: every write is a
// transaction that either committed, durably, or did not happen.
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
	"lnk.dev/linkharness/store/sqlite"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lnk-sqlite:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("lnk-sqlite", flag.ContinueOnError)
	dir := fs.String("home", "", "the agent's home folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--home is needed")
	}
	path, err := home.Agent{Dir: *dir}.Path(home.SQLite, "")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	d, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	serr := driver.Serve(context.Background(), d, os.Stdin, os.Stdout)
	if err := d.Close(); serr == nil {
		serr = err
	}
	return serr
}
