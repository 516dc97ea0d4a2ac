package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/convert"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/storetest"
)

// postgresURL is the database store/postgres's tests use, if any; when
// set, conversions go through lnk-postgres too, and forks are made in it.
var postgresURL = os.Getenv("LNK_TEST_POSTGRES_URL")

func TestMain(m *testing.M) {
	var err error
	if allBin, err = os.MkdirTemp("", "lnk-help-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(allBin)
	os.Exit(code)
}

// withDrivers puts the programs, the drivers' among them (buildAll), on
// PATH, so conversions reach them as the harness does, and returns the
// opener the test reads with, with no store bridge, ending what it
// started when the test is done.
func withDrivers(t *testing.T) *stores.Opener {
	bin, err := buildAll()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("LNK_POSTGRES_URL", postgresURL) // lnk-postgres's, read from its environment
	o := new(stores.Opener)
	t.Cleanup(func() { o.Close() })
	return o
}

// noEnv is the environment of the commands the tests run: nothing set.
func noEnv(string) string { return "" }

// served holds the agent's home h as lnk-link-harness serve does, with a
// shared flock, until release or the test's end.
func served(t *testing.T, h string) (release func()) {
	t.Helper()
	f, err := os.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

const toolsJSON = `{"tools":["file__read","memory__search"]}` + "\n"

// convHome makes an agent's home with two log conversations of 60 events
// each (every event the bytes storetest.Event makes, which a store that
// re-encodes would change), tools.json, an answer not handed over, a turn
// asked to end, and an empty folder; it returns the home, the first
// conversation's folder and its events.
func convHome(t *testing.T) (string, string, [][]byte) {
	// lnk-postgres keys rows by the home's name, in a database other
	// runs share.
	h := filepath.Join(t.TempDir(), fmt.Sprintf("agent-%d-%d", os.Getpid(), time.Now().UnixNano()))
	var first [][]byte
	for _, name := range []string{"telegram-42", "b"} {
		dir := filepath.Join(h, "chats", name)
		os.MkdirAll(filepath.Join(dir, "pending"), 0o700)
		l, err := eventlog.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for seq := int64(1); seq <= 60; seq++ {
			ev := storetest.Event(name, seq, 0)
			if err := l.Append(context.Background(), seq, ev); err != nil {
				t.Fatal(err)
			}
			if name == "telegram-42" {
				first = append(first, ev)
			}
		}
		l.Close()
		os.WriteFile(filepath.Join(dir, "tools.json"), []byte(toolsJSON), 0o600)
		os.WriteFile(filepath.Join(dir, "pending", "7.json"), []byte(`{"seq":7}`), 0o600)
		os.WriteFile(filepath.Join(dir, "end"), nil, 0o600)
	}
	os.MkdirAll(filepath.Join(h, "chats", "new"), 0o700)
	return h, filepath.Join(h, "chats", "telegram-42"), first
}

// events reads every event of the conversation in dir the way its folder
// says it is kept.
func events(t *testing.T, o *stores.Opener, dir string) [][]byte {
	t.Helper()
	c, err := o.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got [][]byte
	if err := c.Read(context.Background(), 1, store.Forward, func(_ int64, ev []byte) bool {
		got = append(got, bytes.Clone(ev))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func sameEvents(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: event %d is\n%s\nwant\n%s", what, i+1, got[i], want[i])
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// keptTools returns the driver's narrowing of the conversation in dir.
func keptTools(t *testing.T, c store.Conversation) (string, error) {
	t.Helper()
	b, err := c.(store.Meta).MetaGet(context.Background(), store.ToolsMeta)
	return string(b), err
}

// convertTo runs the command, after ending the drivers the test's opener
// started: lnk-pebble keeps its folder locked while it runs.
func convertTo(t *testing.T, o *stores.Opener, h, to string) {
	t.Helper()
	o.Close()
	if err := run([]string{"agent", "chat", "convert", "--home", h, "--to", to}, noEnv); err != nil {
		t.Fatalf("--to %s: %v", to, err)
	}
}

// TestConvertDrivers moves conversations through the drivers and back to
// the log: every event comes back byte for byte after each step, and the
// log's bytes at the end are the first ones. A folder a driver keeps holds
// its marker, the answer not handed over and the end asked for; tools.json
// becomes the driver's narrowing, and comes back from it. A driver left
// keeps nothing of the conversation.
func TestConvertDrivers(t *testing.T) {
	o := withDrivers(t)
	paths := [][]string{
		{"sqlite", "compact", "log"},
		{"pebble", "compact", "log"},
		{"compact", "sqlite", "pebble", "log"},
	}
	if postgresURL != "" {
		paths = append(paths, []string{"postgres", "sqlite", "log"})
	}
	for _, path := range paths {
		t.Run(strings.Join(path, "-"), func(t *testing.T) {
			h, dir, want := convHome(t)
			orig, _ := os.ReadFile(filepath.Join(dir, eventlog.FileName))
			prev := "log"
			for _, to := range path {
				convertTo(t, o, h, to)
				what := prev + " → " + to
				sameEvents(t, what, events(t, o, dir), want)
				sameEvents(t, what+" (the other conversation)", events(t, o, filepath.Join(h, "chats", "b"))[:1], [][]byte{storetest.Event("b", 1, 0)})
				if m, _ := filepath.Glob(filepath.Join(h, "chats", "*~convert")); len(m) != 0 {
					t.Fatalf("%s: left behind %v", what, m)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "pending", "7.json")); string(b) != `{"seq":7}` {
					t.Fatalf("%s: pending/ did not move along", what)
				}
				if convert.IsDriver(to) {
					got := names(t, dir)
					if want := []string{"end", "pending", "store." + to}; !slices.Equal(got, want) {
						t.Fatalf("%s: the folder holds %v, want %v", what, got, want)
					}
					c, _ := o.Open(dir, "")
					if tools, err := keptTools(t, c); err != nil || tools != `["file__read","memory__search"]` {
						t.Fatalf("%s: the driver's narrowing %s, %v", what, tools, err)
					}
				} else if b, _ := os.ReadFile(filepath.Join(dir, "tools.json")); string(b) != toolsJSON {
					t.Fatalf("%s: tools.json %q", what, b)
				}
				if convert.IsDriver(prev) {
					c, err := o.OpenKept(dir, prev)
					if err != nil {
						t.Fatal(err)
					}
					if n, err := c.Last(context.Background()); err != nil || n != 0 {
						t.Fatalf("%s: %s still keeps %d events (%v)", what, prev, n, err)
					}
					if _, err := keptTools(t, c); !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("%s: %s still keeps the narrowing (%v)", what, prev, err)
					}
				}
				if names(t, filepath.Join(h, "chats", "new")) != nil {
					t.Fatalf("%s: the empty folder was written", what)
				}
				prev = to
			}
			if got, _ := os.ReadFile(filepath.Join(dir, eventlog.FileName)); !bytes.Equal(got, orig) {
				t.Fatalf("%s gave %d bytes back of %d", strings.Join(path, " → "), len(got), len(orig))
			}
		})
	}
}

// TestConvertDriverRerun runs conversions again after ones that stopped
// short, each stop made as it leaves the folders.
func TestConvertDriverRerun(t *testing.T) {
	o := withDrivers(t)
	ctx := context.Background()
	write := func(t *testing.T, dir, drv string, evs [][]byte) {
		c, err := o.OpenKept(dir, drv)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if err := c.Append(ctx, int64(i+1), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	last := func(t *testing.T, dir, drv string) int64 {
		c, err := o.OpenKept(dir, drv)
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.Last(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("stopped while writing to the driver", func(t *testing.T) {
		h, dir, want := convHome(t)
		write(t, dir, "sqlite", want[:30])
		os.Mkdir(dir+convert.Suffix, 0o700)
		convertTo(t, o, h, "sqlite") // finds the first 30 again, same bytes
		sameEvents(t, "rerun", events(t, o, dir), want)
	})
	t.Run("stopped before the exchange, then to another way", func(t *testing.T) {
		h, dir, want := convHome(t)
		write(t, dir, "pebble", want)
		os.Mkdir(dir+convert.Suffix, 0o700)
		if err := o.Mark(dir+convert.Suffix, "pebble"); err != nil {
			t.Fatal(err)
		}
		convertTo(t, o, h, "compact")
		sameEvents(t, "to compact", events(t, o, dir), want)
		if n := last(t, dir, "pebble"); n != 0 {
			t.Fatalf("pebble keeps %d events nothing reads", n)
		}
	})
	t.Run("stopped before forgetting", func(t *testing.T) {
		h, dir, want := convHome(t)
		write(t, dir, "sqlite", want)
		os.Mkdir(dir+convert.Suffix, 0o700)
		os.Mkdir(filepath.Join(dir+convert.Suffix, "pending"), 0o700)
		if err := o.Mark(dir+convert.Suffix, "sqlite"); err != nil {
			t.Fatal(err)
		}
		convertTo(t, o, h, "log")
		if n := last(t, dir, "sqlite"); n != 0 {
			t.Fatalf("sqlite keeps %d events nothing reads", n)
		}
		if _, err := os.Stat(dir + convert.Suffix); err == nil {
			t.Fatal("the old folder is still there")
		}
		sameEvents(t, "the log", events(t, o, dir), want)
	})
	t.Run("a driver keeping other bytes", func(t *testing.T) {
		h, dir, want := convHome(t)
		write(t, dir, "sqlite", [][]byte{storetest.Event("telegram-42", 1, 1)})
		o.Close()
		err := run([]string{"agent", "chat", "convert", "--home", h, "--to", "sqlite"}, noEnv)
		if !errors.Is(err, store.ErrSeqTaken) {
			t.Fatalf("to a driver keeping other bytes: %v", err)
		}
		sameEvents(t, "the log", events(t, o, dir), want)
		convertTo(t, o, h, "compact")
		if n := last(t, dir, "sqlite"); n != 1 {
			t.Fatalf("rows no conversion wrote were forgotten: sqlite keeps %d", n)
		}
	})
}

// TestConvertThroughBridge converts through the store bridge, which runs
// lnk-sqlite for its own home: the same code, with the driver out of reach.
func TestConvertThroughBridge(t *testing.T) {
	withDrivers(t)
	bin, _ := buildAll()
	key := []byte("agent-key")
	behind := driver.New(driver.NewProcess(filepath.Join(bin, "lnk-sqlite"), "--home", t.TempDir()))
	defer behind.Close()
	srv := httptest.NewServer(driver.Handler(behind, key))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, append(key, '\n'), 0o600)
	env := map[string]string{stores.BridgeEnv: srv.URL, stores.BridgeKeyEnv: keyFile}
	getenv := func(k string) string { return env[k] }
	o, err := stores.FromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	convertTo := func(t *testing.T, _ *stores.Opener, h, to string) {
		t.Helper()
		if err := run([]string{"agent", "chat", "convert", "--home", h, "--to", to}, getenv); err != nil {
			t.Fatalf("--to %s: %v", to, err)
		}
	}

	h, dir, want := convHome(t)
	convertTo(t, o, h, "sqlite")
	sameEvents(t, "through the bridge", events(t, o, dir), want)
	if _, err := os.Stat(filepath.Join(h, "chats", "events.sqlite")); err == nil {
		t.Fatal("the agent's home holds the driver's file, not the bridge's")
	}
	if err := run([]string{"agent", "chat", "convert", "--home", h, "--to", "pebble"}, getenv); err == nil || !strings.Contains(err.Error(), "bridge") {
		t.Fatalf("driver to driver through the bridge: %v", err)
	}
	convertTo(t, o, h, "log")
	sameEvents(t, "back to the log", events(t, o, dir), want)
	if th, err := behind.Threads(context.Background()); err != nil || len(th) != 0 {
		t.Fatalf("the bridge's driver still keeps %v (%v)", th, err)
	}
	var tools struct{ Tools []string }
	b, _ := os.ReadFile(filepath.Join(dir, "tools.json"))
	if json.Unmarshal(b, &tools) != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools.json %q", b)
	}
}
