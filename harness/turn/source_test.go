package turn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/settings"
)

// A source in [instructions] is read from the home, whether named by a
// path relative to it or beneath it, whatever folder the process runs in
// (here the package's, which holds no instructions/).
func TestSourceFromTheHome(t *testing.T) {
	r, m := newRunner(t, nil)
	dir := r.Agent.Dir
	if err := os.MkdirAll(filepath.Join(dir, "instructions"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "instructions", "ada.md"), []byte("You are Ada's own persona."), 0o600)
	os.WriteFile(filepath.Join(dir, "owner-notes.md"), []byte("Ada writes in French."), 0o600)
	s := settings.Defaults()
	s.Instructions = map[string]settings.Section{
		"persona": {Source: "instructions/ada.md"},
		"owner":   {Source: filepath.Join(dir, "owner-notes.md")},
	}
	if err := settings.Write(filepath.Join(dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("instructions/ada.md"); err == nil {
		t.Fatal("the process's folder holds instructions/ada.md: the test would not tell")
	}
	for _, text := range []string{"hello", "again"} { // read, then known unchanged
		if _, err := r.Message(context.Background(), "t", Message{Text: text}, nil); err != nil {
			t.Fatal(err)
		}
		req := lastRequest(t, m)
		for _, want := range []string{"You are Ada's own persona.", "Ada writes in French."} {
			if !strings.Contains(req, jsonString(want)) {
				t.Errorf("turn %q: the request lacks %q", text, want)
			}
		}
	}
}
