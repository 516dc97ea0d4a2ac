package storetest

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
)

// pluginEnv, in a plugin program's test binary's environment, makes the
// binary run as the plugin program instead of its tests.
const pluginEnv = "LNK_PLUGIN_TEST"

// PluginMain is the TestMain of a plugin program's tests: started by
// Plugin, the test binary is the plugin program itself (it runs main), so
// the tests reach the store through the program as the harness does.
func PluginMain(m *testing.M, main func()) {
	if os.Getenv(pluginEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Plugin starts the test binary as its plugin program on home, speaking
// the protocol on stdin and stdout. Settings the program reads from its
// environment are set with t.Setenv before the call.
func Plugin(t testing.TB, home string) *driver.Driver {
	t.Setenv(pluginEnv, "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return driver.New(driver.NewProcess(self, "--home", home))
}

// RunPlugin runs the suite through the plugin program that plugin starts
// on a home in dir, and through the store bridge's handler in front of it,
// as lnk store-bridge serves it.
func RunPlugin(t *testing.T, plugin func(t testing.TB, dir string) *driver.Driver) {
	t.Run("Plugin", func(t *testing.T) {
		RunHome(t, func(t *testing.T, dir string) store.Driver { return plugin(t, dir) })
	})
	t.Run("Bridge", func(t *testing.T) {
		key := []byte("agent-key")
		RunHome(t, func(t *testing.T, dir string) store.Driver {
			p := plugin(t, dir)
			srv := httptest.NewServer(driver.Handler(p, key))
			t.Cleanup(srv.Close)
			return bridged{driver.New(driver.NewHTTP(srv.URL, key, srv.Client())), p}
		})
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

// BenchmarkPlugin benchmarks appending typical events, and reading the
// last 32 of 1,000, through the plugin program that plugin starts.
func BenchmarkPlugin(b *testing.B, plugin func(t testing.TB, dir string) *driver.Driver) {
	b.Run("Append", func(b *testing.B) {
		d := plugin(b, b.TempDir())
		defer d.Close()
		c, _ := d.Open("t")
		BenchAppend(b, c, 0)
	})
	b.Run("ReadLast32", func(b *testing.B) {
		d := plugin(b, b.TempDir())
		defer d.Close()
		c, _ := d.Open("t")
		for seq := int64(1); seq <= 1000; seq++ {
			if err := c.Append(context.Background(), seq, TypicalEvent(seq)); err != nil {
				b.Fatal(err)
			}
		}
		BenchReadLast32(b, c)
	})
}
