package drive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NewAgents makes each agent's home, scratch folder and key file, the key
// new for each and readable by its owner alone.
func TestNewAgents(t *testing.T) {
	dir := t.TempDir()
	agents, err := NewAgents(dir, 2, "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 2 || agents[1].Name != "agent-2" || agents[0].Key == agents[1].Key {
		t.Fatalf("agents %+v", agents)
	}
	a := agents[1]
	if a.Home != filepath.Join(dir, "agents", "agent-2") || a.Scratch != filepath.Join(dir, "run", "agent-2") ||
		a.KeyFile != filepath.Join(dir, "keys", "agent-2.key") || a.Model != "http://127.0.0.1:9" || len(a.Key) != 48 {
		t.Errorf("agent %+v", a)
	}
	for _, d := range []string{a.Home, a.Scratch} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	fi, err := os.Stat(a.KeyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(a.KeyFile); strings.TrimSpace(string(b)) != a.Key {
		t.Errorf("key file holds %q, want %q", b, a.Key)
	}
}
