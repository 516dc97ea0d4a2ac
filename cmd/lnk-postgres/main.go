// Command lnk-postgres is the store driver keeping conversations in a
// PostgreSQL (or CockroachDB) database that many agents and machines share.
// Link Harness starts it with the agent's home and speaks the driver
// protocol on its standard input and output (FORMATS.md, "Store drivers");
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
	"os"
	"path/filepath"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/postgres"
)

func main() {
	url := os.Getenv(postgres.URLEnv)
	driver.Main("lnk-postgres", func(dir string) (store.Driver, error) { return open(url, dir) })
}

// open connects to the database url names (LNK_POSTGRES_URL; when empty,
// the PG* variables), as the agent the home folder dir is named for.
func open(url, dir string) (store.Driver, error) {
	ctx, cancel := context.WithTimeout(context.Background(), driver.CallTimeout)
	defer cancel()
	return postgres.Open(ctx, url, filepath.Base(dir))
}
