package driver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/store"
)

// Main is a driver plugin program: it takes --home DIR, opens the agent's
// store with open (given the home as an absolute path), serves the protocol
// on standard input and output until the input ends, closes the store and
// exits, with status 1 and the error on standard error when something
// failed. name is the program's name, lnk-<driver>.
func Main(name string, open func(home string) (store.Driver, error)) {
	if err := runMain(name, os.Args[1:], open); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func runMain(name string, args []string, open func(home string) (store.Driver, error)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dir := fs.String("home", "", "the agent's home folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--home is needed")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	d, err := open(abs)
	if err != nil {
		return err
	}
	serr := Serve(context.Background(), d, os.Stdin, os.Stdout)
	if err := d.Close(); serr == nil {
		serr = err
	}
	return serr
}
