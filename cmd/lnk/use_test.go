package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/settings"
)

// lnk agent use --harness link writes KNOWN's plugin and program; an
// adapter on PATH is taken by its own name; an unknown name is refused,
// listing the known ones, and writes nothing.
func TestAgentUse(t *testing.T) {
	h := filepath.Join(t.TempDir(), "ada")
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "lnk-claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"PATH": bin}[k] }
	read := func() settings.HarnessProgram {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(h, "harness.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got settings.HarnessProgram
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := run([]string{"agent", "use", "--harness", "link", "--home", h}, env); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != (settings.HarnessProgram{Name: "link", Plugin: "link-harness", Program: "lnk-link-harness", Known: true}) {
		t.Errorf("link: %+v", got)
	}
	if err := run([]string{"agent", "use", "--harness", "claude", "--home", h}, env); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.Program != "lnk-claude" || got.Known {
		t.Errorf("claude: %+v", got)
	}
	err := run([]string{"agent", "use", "--harness", "codex", "--home", h}, env)
	if !errors.Is(err, settings.ErrUnknownHarness) || !strings.Contains(err.Error(), "known harnesses are link") {
		t.Fatalf("codex: %v, want refused listing the known ones", err)
	}
	if got := read(); got.Program != "lnk-claude" {
		t.Errorf("a refused name changed harness.json: %+v", got)
	}
}
