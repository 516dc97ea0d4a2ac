package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/postgres"
	"lnk.dev/linkharness/store/postgres/pgtest"
	"lnk.dev/linkharness/store/storetest"
)

// appName names this process's connections, so a test can tell whether a
// stopped process is inside a transaction.
func appName(pid int) string { return fmt.Sprintf("lnk-storetest-%d", pid) }

// sharedConv opens conversation "race" of dir's agent, as each process
// racing on it does. Only the parent removes the agent's rows at its end:
// a child ending must not take them from the other.
func sharedConv(t *testing.T, dir string) store.Conversation {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", appName(os.Getpid()))
	u.RawQuery = q.Encode()
	d, err := postgres.Open(context.Background(), u.String(), storetest.Agent(dir))
	c := storetest.OpenThread(t, d, err, "race")
	if !storetest.IsChild() {
		t.Cleanup(func() { pgtest.Forget(t, u.String(), storetest.Agent(dir)) })
	}
	return c
}

// TestRaceTurns has two processes race turns on one conversation in one
// database (storetest.RaceTurns).
func TestRaceTurns(t *testing.T) {
	pgtest.URL(t)
	storetest.RaceTurns(t, sharedConv, storetest.RaceLength())
}

// TestStoppedHolder stops a lease holder past its time to live
// (storetest.StoppedHolder). A process stopped inside a transaction keeps
// its row locks, and the successor's lease waits for them, so the holder
// is stopped where none of its connections is inside one.
func TestStoppedHolder(t *testing.T) {
	u := pgtest.URL(t)
	storetest.StoppedHolder(t, sharedConv, func(t *testing.T, dir string, pid int) bool {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var busy int
		err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'`, appName(pid)).Scan(&busy)
		if err != nil {
			t.Fatal(err)
		}
		return busy == 0
	})
}
