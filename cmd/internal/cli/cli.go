// Package cli holds what every Link Harness program does alike with its
// command line, so that each answers --help the same way.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
)

// Parse parses fs's flags from args: --help prints its usage on standard
// output (and Parse returns flag.ErrHelp, which a program ends on with
// status 0), and a mistake it on standard error.
func Parse(fs *flag.FlagSet, args []string) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Stdout.Write(out.Bytes())
	case err != nil:
		os.Stderr.Write(out.Bytes())
	}
	return err
}
