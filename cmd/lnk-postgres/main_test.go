package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/postgres"
	"lnk.dev/linkharness/store/storetest"
)

// With LNK_PLUGIN_TEST set, the test binary is lnk-postgres itself, so the
// tests below reach the store through the plugin program as the harness
// does.
func TestMain(m *testing.M) {
	if os.Getenv("LNK_PLUGIN_TEST") != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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
	t.Setenv("LNK_PLUGIN_TEST", "1")
	t.Setenv(postgres.URLEnv, url)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return driver.New(driver.NewProcess(self, "--home", filepath.Join(dir, agent)))
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

func TestConformancePlugin(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return plugin(t, dir) })
}

// TestConformanceBridge reaches the plugin program through the store
// bridge's handler, as lnk store-bridge serves it.
func TestConformanceBridge(t *testing.T) {
	key := []byte("agent-key")
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		p := plugin(t, dir)
		srv := httptest.NewServer(driver.Handler(p, key))
		t.Cleanup(srv.Close)
		return bridged{driver.New(driver.NewHTTP(srv.URL, key, srv.Client())), p}
	})
}

// bridged is the bridge's client, whose Close also ends the bridge's
// plugin program, as stopping lnk store-bridge does.
type bridged struct {
	*driver.Driver
	p *driver.Driver
}

func (b bridged) Close() error {
	b.Driver.Close()
	return b.p.Close()
}
