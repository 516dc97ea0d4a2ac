package driver

import (
	"bytes"
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
	err := runMain(name, os.Args[1:], open)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func runMain(name string, args []string, open func(home string) (store.Driver, error)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s --home DIR\n\nThe store driver %s: Link Harness starts it with the agent's home and speaks the\ndriver protocol (newline-delimited JSON-RPC 2.0) on its standard input and output;\nit ends when its input does.\n\nflags:\n", name, name)
		fs.PrintDefaults()
	}
	dir := fs.String("home", "", "the agent's home folder")
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Stdout.Write(out.Bytes()) // asked for: on standard output
		}
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
