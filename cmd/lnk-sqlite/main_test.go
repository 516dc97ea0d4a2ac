package main

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/storetest"
)

// With LNK_PLUGIN_TEST set, the test binary is lnk-sqlite itself, so the
// tests below reach the store through the plugin program as the harness
// does.
func TestMain(m *testing.M) {
	if os.Getenv("LNK_PLUGIN_TEST") != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func plugin(t testing.TB, home string) *driver.Driver {
	t.Setenv("LNK_PLUGIN_TEST", "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return driver.New(driver.NewProcess(self, "--home", home))
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

// BenchmarkPluginAppend appends typical events through the plugin program.
func BenchmarkPluginAppend(b *testing.B) {
	d := plugin(b, b.TempDir())
	defer d.Close()
	c, _ := d.Open("t")
	ctx := context.Background()
	b.ReportAllocs()
	seq := int64(0)
	for b.Loop() {
		seq++
		if err := c.Append(ctx, seq, storetest.TypicalEvent(seq)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPluginReadLast32 reads the last 32 of 1,000 events through the
// plugin program.
func BenchmarkPluginReadLast32(b *testing.B) {
	d := plugin(b, b.TempDir())
	defer d.Close()
	c, _ := d.Open("t")
	ctx := context.Background()
	for seq := int64(1); seq <= 1000; seq++ {
		if err := c.Append(ctx, seq, storetest.TypicalEvent(seq)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, err := storetest.ReadLast32(c); err != nil || got != 32 {
			b.Fatal(got, err)
		}
	}
}
