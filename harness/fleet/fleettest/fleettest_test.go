package fleettest_test

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/harness/fleet"
	"lnk.dev/linkharness/harness/fleet/fleettest"
)

// The entries Agent writes are an agents file fleet reads: each agent's
// home and key file, and its env table when it has one.
func TestAgentRead(t *testing.T) {
	dir := t.TempDir()
	text := fleettest.Agent(t, dir, "a") + fleettest.Agent(t, dir, "b", "LNK_MODEL_PROXY=http://127.0.0.1:1", "LNK_HOME="+dir)
	path := filepath.Join(dir, "agents.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.ReadAgents(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(f.Units) != 2 {
		t.Fatalf("%d agents read of\n%s", len(f.Units), text)
	}
	for i, want := range []struct {
		name string
		env  map[string]string
	}{
		{"a", nil},
		{"b", map[string]string{"LNK_MODEL_PROXY": "http://127.0.0.1:1", "LNK_HOME": dir}},
	} {
		u := f.Units[i]
		if u.Name != want.name || u.Home != filepath.Join(dir, want.name) || !maps.Equal(u.Env, want.env) {
			t.Errorf("agent %d read as %+v, want %s with env %v", i+1, u, want.name, want.env)
		}
		if key, err := os.ReadFile(u.KeyFile); err != nil || string(key) != fleettest.Key(want.name)+"\n" {
			t.Errorf("%s's key file holds %q: %v", want.name, key, err)
		}
	}
}

func TestListening(t *testing.T) {
	for line, want := range map[string][2]string{
		"listening on 127.0.0.1:80 for ada\n": {"ada", "http://127.0.0.1:80"},
		"listening on 127.0.0.1:80":           {"", "http://127.0.0.1:80"},
		"blank on /tmp/c":                     {"error"},
		"listening on ":                       {"error"},
	} {
		name, base, err := fleettest.Listening(line)
		if got := [2]string{name, base}; err != nil && want[0] != "error" || err == nil && got != want {
			t.Errorf("Listening(%q) = %q, %q, %v; want %q", line, name, base, err, want)
		}
	}
}
