// Command lnk-postgres is the store driver keeping conversations in a
// PostgreSQL (or CockroachDB) database that many agents and machines share.
// Link Harness starts it with the agent's home and speaks the driver
// protocol on its standard input and output (DESIGN.md, "Store drivers");
// it ends when its input does.
//
//	LNK_POSTGRES_URL=postgres://user:password@host:5432/db lnk-postgres --home DIR
//
// The connection comes from the environment, LNK_POSTGRES_URL (a URL or a
// key=value DSN; when empty, the PG* variables), never from the agent's
// config.json: the driver runs outside the sandbox, behind the store
// bridge, so the password never enters the agent's home. The agent is the
// home folder's name (homes are agents/<name>), the key its rows carry.
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

	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/postgres"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "lnk-postgres:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("lnk-postgres", flag.ContinueOnError)
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
	ctx, cancel := context.WithTimeout(context.Background(), driver.CallTimeout)
	d, err := postgres.Open(ctx, os.Getenv(postgres.URLEnv), filepath.Base(abs))
	cancel()
	if err != nil {
		return err
	}
	serr := driver.Serve(context.Background(), d, os.Stdin, os.Stdout)
	if err := d.Close(); serr == nil {
		serr = err
	}
	return serr
}
