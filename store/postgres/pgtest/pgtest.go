package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"lnk.dev/linkharness/store/postgres"
)

// Schema makes a schema of the test's own in the test database, dropped
// when the test ends, and returns the database's connection string with
// its search_path set to it: tests share the database, and every test's
// agent may have the same name. Without LNK_TEST_POSTGRES_URL the test is
// skipped, but in CI (CI=true) it fails.
func Schema(t *testing.T) string {
	t.Helper()
	base := URL(t)
	h := sha256.Sum256([]byte(t.TempDir()))
	schema := "lnk_test_" + hex.EncodeToString(h[:8])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, base, schema)
}

// SchemaEnv points LNK_POSTGRES_URL, which lnk-postgres and the harness
// read, at a schema of the test's own (Schema) for the test's length.
func SchemaEnv(t *testing.T) {
	t.Helper()
	t.Setenv(postgres.URLEnv, Schema(t))
}

// withSearchPath returns the connection string conn (a URL or a key=value
// DSN) with its search_path set to schema.
func withSearchPath(t *testing.T, conn, schema string) string {
	t.Helper()
	if !strings.HasPrefix(conn, "postgres://") && !strings.HasPrefix(conn, "postgresql://") {
		return conn + " search_path=" + schema
	}
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatalf("LNK_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
