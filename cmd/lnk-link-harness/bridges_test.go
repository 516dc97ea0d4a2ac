package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/store/sqlite"
)

// Twenty agents of one process, each kept by a store bridge of its own
// (its [agent.env] LNK_STORE_BRIDGE and key file): each conversation is in
// its own agent's bridge's store alone. An agent whose store is a driver
// this process cannot run, with no bridge, is refused at start, saying
// which agent and which keys would give it one.
func TestBridgePerAgent(t *testing.T) {
	keptBy(t, "sqlite")
	const n = 20
	dir := t.TempDir()
	modelAddr := startModel(t)
	spec := filepath.Join(dir, "spec.toml")
	os.WriteFile(spec, []byte("[model]\nname = \"anthropic/claude-opus-5-5\"\n[storage]\nconversations = \"sqlite\"\n"), 0o600)
	var file strings.Builder
	stores := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("a%d", i)
		home := filepath.Join(dir, name)
		if out, err := command(t, nil, "lnk", "agent", "configure", "--spec", spec, "--home", home).CombinedOutput(); err != nil {
			t.Fatalf("configure %s: %v %s", name, err, out)
		}
		key := fleettest.KeyFile(t, dir, name)
		// The bridge keeps the agent's conversations in a folder of its own,
		// as Link's bridge keeps them off the agent's machine.
		stores[i] = filepath.Join(dir, "bridge-"+name)
		os.Mkdir(stores[i], 0o700)
		_, addr := start(t, nil, "lnk", "store-bridge", "--home", stores[i], "--driver", "sqlite", "--key-file", key)
		file.WriteString(fleettest.Entry(name, home, key, "LNK_MODEL_PROXY=http://"+modelAddr, "LNK_STORE_BRIDGE=http://"+addr, "LNK_STORE_BRIDGE_KEY_FILE="+key))
	}
	path := filepath.Join(dir, "agents.toml")
	os.WriteFile(path, []byte(file.String()), 0o600)
	cmd := command(t, nil, "lnk-link-harness", "serve", "--agents", path)
	cmd.Stderr = os.Stderr
	out := startOut(t, cmd)
	defer terminate(cmd)
	addrs := out.addresses(t, n)
	var wg sync.WaitGroup
	for name, base := range addrs {
		wg.Go(func() {
			code, b, err := fleettest.Post(http.DefaultClient, base, name, fleettest.Key(name), "t-"+name, `{"id":"1","text":"hello"}`)
			if err != nil {
				t.Error(err)
				return
			}
			if code != 200 {
				t.Errorf("%s: %d %s", name, code, b)
			}
		})
	}
	wg.Wait()
	terminate(cmd)
	for i := range n {
		d, err := sqlite.Open(filepath.Join(stores[i], "chats", "events.sqlite"))
		if err != nil {
			t.Fatalf("bridge %d's store: %v", i, err)
		}
		threads, err := d.Threads(context.Background())
		d.Close()
		if want := []string{fmt.Sprintf("t-a%d", i)}; err != nil || !slices.Equal(threads, want) {
			t.Errorf("bridge %d's store holds %v %v, want %v alone", i, threads, err, want)
		}
	}

	// A driver of no program here, and no bridge: refused at start.
	lone := filepath.Join(dir, "lone")
	os.WriteFile(spec, []byte("[model]\nname = \"anthropic/claude-opus-5-5\"\n[storage]\nconversations = \"elsewhere\"\n"), 0o600)
	if out, err := command(t, nil, "lnk", "agent", "configure", "--spec", spec, "--home", lone).CombinedOutput(); err != nil {
		t.Fatalf("configure lone: %v %s", err, out)
	}
	os.WriteFile(path, []byte(fleettest.Entry("lone", lone, filepath.Join(dir, "a0.key"), "LNK_MODEL_PROXY=http://"+modelAddr)), 0o600)
	refused, err := command(t, nil, "lnk-link-harness", "serve", "--agents", path).CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "agent lone") || !strings.Contains(string(refused), "LNK_STORE_BRIDGE") ||
		!strings.Contains(string(refused), "LNK_STORE_BRIDGE_KEY_FILE") {
		t.Errorf("an agent kept by a driver it cannot reach: %v %s", err, refused)
	}
}
