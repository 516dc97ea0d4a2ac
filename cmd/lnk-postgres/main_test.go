package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/postgres"
	"lnk.dev/linkharness/store/storetest"
)

// The test binary is lnk-postgres itself when storetest.Plugin starts it, so
// the tests reach the store through the plugin program as the harness does.
func TestMain(m *testing.M) { storetest.PluginMain(m, main) }

// plugin starts the program on a home in dir named for an agent of its
// own, whose rows are removed when the test ends. Without
// LNK_TEST_POSTGRES_URL the test is skipped, but in CI (CI=true) it fails.
func plugin(t testing.TB, dir string) *driver.Driver {
	url := os.Getenv("LNK_TEST_POSTGRES_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("LNK_TEST_POSTGRES_URL is not set: CI must start PostgreSQL (see .ci/run)")
		}
		t.Skip("LNK_TEST_POSTGRES_URL is not set: no PostgreSQL to test against")
	}
	h := sha256.Sum256([]byte(dir))
	agent := "test-" + hex.EncodeToString(h[:8])
	t.Cleanup(func() { forget(t, url, agent) })
	t.Setenv(postgres.URLEnv, url)
	return storetest.Plugin(t, filepath.Join(dir, agent))
}

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

// BenchmarkPlugin appends and reads the tail through the program.
func BenchmarkPlugin(b *testing.B) { storetest.BenchmarkPlugin(b, plugin) }

// TestConformancePlugin runs the suite through the plugin program. The
// store bridge in front of it is the same for every driver, and is run
// through the suite in front of lnk-sqlite and lnk-pebble.
func TestConformancePlugin(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return plugin(t, dir) })
}
