package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the database the tests use, which they share with other
// runs: each test keeps its rows under an agent of its own
// (storetest.Agent), or in
// a schema of its own (Schema), and removes them at its end. .ci/run
// starts a server and sets it.
const URLEnv = "LNK_TEST_POSTGRES_URL"

// URL returns the test database's connection string, or skips the test
// without one, except in CI (CI=true), where a missing server is a
// failure.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(URLEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set: CI must start PostgreSQL (see .ci/run)", URLEnv)
		}
		tb.Skipf("%s is not set: no PostgreSQL to test against", URLEnv)
	}
	return url
}

// Forget removes every row of agent from the database at url, so test runs
// do not pile up in a shared database. What fails is reported to tb.
func Forget(tb testing.TB, url, agent string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Errorf("forget %s: %v", agent, err)
		return
	}
	defer conn.Close(ctx)
	for _, table := range []string{"lnk_events", "lnk_leases", "lnk_meta"} {
		if _, err := conn.Exec(ctx, "DELETE FROM "+table+" WHERE agent = $1", agent); err != nil {
			tb.Errorf("forget %s: %v", agent, err)
		}
	}
}
