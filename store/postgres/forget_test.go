package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// forget removes every row of agent, so test runs do not pile up in a
// shared database.
func forget(t testing.TB, url, agent string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("forget %s: %v", agent, err)
		return
	}
	defer conn.Close(ctx)
	for _, table := range []string{"lnk_events", "lnk_leases", "lnk_meta"} {
		if _, err := conn.Exec(ctx, "DELETE FROM "+table+" WHERE agent = $1", agent); err != nil {
			t.Errorf("forget %s: %v", agent, err)
		}
	}
}
