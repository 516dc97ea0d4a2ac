package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/store"
	eventlog "lnk.dev/linkharness/store/log"
)

// fleetOf is the fleet of the agents file text, written in dir, served
// in the environment environ, its listening lines written to out and room
// for dozed agents falling asleep at once. It is made as main makes one
// (the process's one client of the model proxy and of tool servers), its
// agents' conversations kept as logs.
func fleetOf(t *testing.T, dir, text string, environ []string, out io.Writer, dozed int) (*fleet, AgentsFile) {
	t.Helper()
	path := filepath.Join(dir, "agents.toml")
	os.WriteFile(path, []byte(text), 0o600)
	file, err := ReadAgents(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh := Shared{
		Environ: environ, Log: slog.New(slog.DiscardHandler),
		Model: &http.Client{Transport: &model.Transport{MaxIdle: budget.MaxIdleModel, IdleTimeout: 30 * time.Second}},
		Tools: &http.Client{Transport: &http.Transport{MaxIdleConns: budget.MaxIdleTools, MaxIdleConnsPerHost: budget.MaxIdleTools, IdleConnTimeout: 30 * time.Second}},
		Facts: &facts.Cache{}, Metrics: new(metrics.Process),
		Stores: func(r Reach) (Opener, error) { return logs{r.Synced}, nil },
		ReadKey: func(path string) (string, error) {
			b, err := os.ReadFile(path)
			return strings.TrimSpace(string(b)), err
		},
	}
	f := &fleet{Shared: sh, ending: context.Background(), srv: srv, out: out, named: true,
		errc: make(chan error, 1), dozed: make(chan struct{}, dozed), running: map[string]*running{}}
	return f, file
}

// addresses reads the listening lines a fleet printed: each agent's base
// URL, by name.
func addresses(t *testing.T, out string) map[string]string {
	t.Helper()
	addrs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, base, err := fleettest.Listening(line)
		if err != nil || name == "" {
			t.Fatalf("printed %q: %v", line, err)
		}
		addrs[name] = base
	}
	return addrs
}

// logs opens every conversation as a log (store/log), the kind an agent
// keeps unless its settings say another.
type logs struct{ synced func(time.Duration) }

func (l logs) Open(dir, kind string) (store.Conversation, error) {
	if _, err := os.Stat(filepath.Join(dir, eventlog.FileName)); kind == "" && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s holds no conversation", store.ErrNotFound, dir)
	}
	return eventlog.OpenOptions(dir, eventlog.Options{Synced: l.synced})
}

func (logs) Check(home, kind string) error {
	if kind != "log" {
		return fmt.Errorf("%q: these tests keep conversations as logs", kind)
	}
	return nil
}

func (logs) Close() error { return nil }
