package main

import (
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/postgres"
	"lnk.dev/linkharness/store/postgres/pgtest"
	"lnk.dev/linkharness/store/storetest"
)

// The test binary is lnk-postgres itself when storetest.Plugin starts it, so
// the tests reach the store through the plugin program as the harness does.
func TestMain(m *testing.M) { storetest.PluginMain(m, main) }

// plugin starts the program on a home in dir named for an agent of its
// own, whose rows are removed when the test ends. Without
// LNK_TEST_POSTGRES_URL the test is skipped, but in CI (CI=true) it fails.
func plugin(t testing.TB, dir string) *driver.Driver {
	url, agent := pgtest.URL(t), storetest.Agent(dir)
	t.Cleanup(func() { pgtest.Forget(t, url, agent) })
	t.Setenv(postgres.URLEnv, url)
	return storetest.Plugin(t, filepath.Join(dir, agent))
}

// BenchmarkPlugin appends and reads the tail through the program.
func BenchmarkPlugin(b *testing.B) { storetest.BenchmarkPlugin(b, plugin) }

// TestConformancePlugin runs the suite through the plugin program. The
// store bridge in front of it is the same for every driver, and is run
// through the suite in front of lnk-sqlite and lnk-pebble.
func TestConformancePlugin(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return plugin(t, dir) })
}
