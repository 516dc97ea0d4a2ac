package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"lnk.dev/linkharness/store/sqlite"
)

// Twenty agents of one process, each kept by a store bridge of its own
// (its [agent.env] LNK_STORE_BRIDGE and key file): each conversation is in
// its own agent's bridge's store alone. An agent whose store is a driver
// this process cannot run, with no bridge, is refused at start, saying
// which agent and which keys would give it one.
func TestBridgePerAgent(t *testing.T) {
	if err := buildSQLite(); err != nil {
		t.Fatal(err)
	}
	const n = 20
	dir := t.TempDir()
	_, modelAddr := start(t, nil, "lnk", "scripted-model", "--listen", "127.0.0.1:0")
	bin, _ := build()
	spec := filepath.Join(dir, "spec.toml")
	os.WriteFile(spec, []byte("[model]\nname = \"anthropic/claude-opus-5-5\"\n[storage]\nconversations = \"sqlite\"\n"), 0o600)
	var file strings.Builder
	stores := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("a%d", i)
		home := filepath.Join(dir, name)
		if out, err := exec.Command(filepath.Join(bin, "lnk"), "agent", "configure", "--spec", spec, "--home", home).CombinedOutput(); err != nil {
			t.Fatalf("configure %s: %v %s", name, err, out)
		}
		key := filepath.Join(dir, name+".key")
		os.WriteFile(key, []byte("key-of-"+name+"-0123456789abcdef\n"), 0o600)
		// The bridge keeps the agent's conversations in a folder of its own,
		// as Link's bridge keeps them off the agent's machine.
		stores[i] = filepath.Join(dir, "bridge-"+name)
		os.Mkdir(stores[i], 0o700)
		_, addr := start(t, nil, "lnk", "store-bridge", "--home", stores[i], "--driver", "sqlite", "--key-file", key)
		fmt.Fprintf(&file, "[[agent]]\nname = %q\nhome = %q\nkey_file = %q\n[agent.env]\nLNK_MODEL_PROXY = %q\nLNK_STORE_BRIDGE = %q\nLNK_STORE_BRIDGE_KEY_FILE = %q\n\n",
			name, home, key, "http://"+modelAddr, "http://"+addr, key)
	}
	path := filepath.Join(dir, "agents.toml")
	os.WriteFile(path, []byte(file.String()), 0o600)
	cmd := exec.Command(filepath.Join(bin, "lnk-link-harness"), "serve", "--agents", path)
	cmd.Env = os.Environ()
	cmd.Stderr = os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	out := readLines(stdout)
	addrs := map[string]string{}
	for range n {
		var addr, name string
		fmt.Sscanf(out.wait(t, "a listening line", "listening on "), "listening on %s for %s", &addr, &name)
		addrs[name] = "http://" + addr
	}
	var wg sync.WaitGroup
	for name, base := range addrs {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", base+"/v1/agents/"+name+"/chats/t-"+name+"/messages", strings.NewReader(`{"id":"1","text":"hello"}`))
			req.Header.Set("Authorization", "Bearer key-of-"+name+"-0123456789abcdef")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s: %s %s", name, resp.Status, b)
			}
		})
	}
	wg.Wait()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
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
	if out, err := exec.Command(filepath.Join(bin, "lnk"), "agent", "configure", "--spec", spec, "--home", lone).CombinedOutput(); err != nil {
		t.Fatalf("configure lone: %v %s", err, out)
	}
	os.WriteFile(path, []byte(fmt.Sprintf("[[agent]]\nname = \"lone\"\nhome = %q\nkey_file = %q\n[agent.env]\nLNK_MODEL_PROXY = %q\n",
		lone, filepath.Join(dir, "a0.key"), "http://"+modelAddr)), 0o600)
	refused, err := exec.Command(filepath.Join(bin, "lnk-link-harness"), "serve", "--agents", path).CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "agent lone") || !strings.Contains(string(refused), "LNK_STORE_BRIDGE") ||
		!strings.Contains(string(refused), "LNK_STORE_BRIDGE_KEY_FILE") {
		t.Errorf("an agent kept by a driver it cannot reach: %v %s", err, refused)
	}
}
