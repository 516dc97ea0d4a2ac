package peer

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
		_, err := Find(context.Background(), c.name, bin, "")
		if !errors.Is(err, ErrMissing) {
			t.Errorf("%s: err %v, want ErrMissing", c.name, err)
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
	if _, err := Find(context.Background(), "nobody", bin, ""); !errors.Is(err, ErrConfig) {
		t.Errorf("an unknown peer: err %v, want ErrConfig", err)
	}
}
