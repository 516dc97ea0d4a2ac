package main

import (
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/gcs"
	"lnk.dev/linkharness/store/storetest"
)

// The test binary is lnk-gcs itself when storetest.Plugin starts it, so
// the tests reach the store through the plugin program as the harness does.
func TestMain(m *testing.M) { storetest.PluginMain(m, main) }

const bucket = "lnk-test"

// fake is fake-gcs-server on loopback, which the plugin programs reach as
// an emulator (STORAGE_EMULATOR_HOST).
var fake = sync.OnceValue(func() *fakestorage.Server {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1"})
	if err != nil {
		panic(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	return srv
})

// plugin starts the program on a home in dir named for an agent of its
// own.
func plugin(t testing.TB, dir string) *driver.Driver { return pluginOn(t, fake(), dir) }

// pluginOn starts the program reaching the fake srv.
func pluginOn(t testing.TB, srv *fakestorage.Server, dir string) *driver.Driver {
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", u.Host)
	t.Setenv(gcs.BucketEnv, bucket)
	t.Setenv(gcs.PrefixEnv, "lnk/")
	return storetest.Plugin(t, filepath.Join(dir, storetest.Agent(dir)))
}

// BenchmarkPlugin appends and reads the tail through the program, against a
// fake of its own keeping its objects in files in memory: the shared fake
// keeps them in a list it scans for each request, so its figures would
// grow with every test before.
func BenchmarkPlugin(b *testing.B) {
	storetest.BenchmarkPlugin(b, func(tb testing.TB, dir string) *driver.Driver {
		srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", StorageRoot: storetest.MemDir(tb)})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(srv.Stop)
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
		return pluginOn(tb, srv, dir)
	})
}

// TestConformancePlugin runs the suite through the plugin program. The
// store bridge in front of it is the same for every driver, and is run
// through the suite in front of lnk-sqlite and lnk-pebble.
func TestConformancePlugin(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return plugin(t, dir) })
}
