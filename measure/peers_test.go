package measure

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// A peer whose program is not here is found missing before anything
// runs, and the error says what is missing and how to get it.
func TestPeerMissing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: every peer is missing it")
	}
	bin := t.TempDir()
	for _, c := range []struct{ name, how string }{
		{"claude", "npm install --no-audit --no-fund @anthropic-ai/claude-code@2.1.197 && (cd node_modules/@anthropic-ai/claude-code && node install.cjs)"},
		{"codex", "@openai/codex@0.171.0"},
		{"crush", "go install github.com/charmbracelet/crush@latest"},
	} {
		_, err := Peer(context.Background(), c.name, bin, "")
		if !errors.Is(err, ErrPeerMissing) {
			t.Errorf("%s: err %v, want ErrPeerMissing", c.name, err)
			continue
		}
		want := []string{c.how, bin}
		if _, nodeErr := exec.LookPath("node"); nodeErr != nil && c.name != "crush" {
			want = []string{"no node on PATH", c.how}
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to say %q", c.name, err, w)
			}
		}
	}
	if _, err := Peer(context.Background(), "nobody", bin, ""); !errors.Is(err, ErrConfig) {
		t.Errorf("an unknown peer: err %v, want ErrConfig", err)
	}
}

// A peer not run is a row saying so, and a line saying why, never a
// figure of nothing.
func TestTableNotRun(t *testing.T) {
	r := &Result{Harness: "link", Peers: []PeerResult{{Harness: "claude", NotRun: "no claude in /x; " + strings.Repeat("install it so ", 20)}}}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "claude: not run: no claude in /x;") || strings.Contains(out, "0 B") {
		t.Errorf("table:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > Width {
			t.Errorf("a line of %d columns: %q", len([]rune(l)), l)
		}
	}
}
