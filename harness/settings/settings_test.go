package settings

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	s, err := Parse("spec.toml", []byte(`
[model]
name = "openai/gpt-6-luna"
fallback = "anthropic/claude-opus-5-5"
timeout = "90s"

[window]
max = 100000
compact_at = "never"
margin = 0.1

[storage]
conversations = "compact"

[turn]
timeout = "2h"

[instructions]
base = "none"
instruction = { source = "instructions/instruction.md", most = 8192 }
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Model = Model{Name: "openai/gpt-6-luna", Fallback: "anthropic/claude-opus-5-5", Timeout: Duration(90 * time.Second)}
	want.Window.Max, want.Window.MaxSet, want.Window.CompactAt, want.Window.Margin = 100000, true, 0, 0.1
	want.Storage.Conversations = "compact"
	want.Turn.Timeout = Duration(2 * time.Hour)
	want.Instructions = map[string]Section{"base": {Source: "none"}, "instruction": {Source: "instructions/instruction.md", Most: 8192}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got  %+v\nwant %+v", s, want)
	}
	if s.Provider() != "openai" {
		t.Errorf("provider %q", s.Provider())
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string // the line and what is named
	}{
		{"[model]\nname = \"anthropic/x\"\nnmae = 1\n", "spec.toml:3: unknown key model.nmae"},
		{"[modle]\nname = \"x\"\n", "spec.toml:1: unknown key modle"},
		{"[model]\nname = 3\n", "spec.toml:2:"},
		{"[model]\nname = \"claude\"\n", "spec.toml:2: [model] name"},
		{"[model]\nname = \"acme/m\"\n", "spec.toml:2: [model] name: no provider"},
		{"[model]\nname = \"acme/m\"\nprovider = \"acme\"\n", "spec.toml:3: [model] provider"},
		{"\n[window]\ncompact_at = 1.5\n", "spec.toml:3: [window] compact_at"},
		{"[window]\ncompact_at = \"sometimes\"\n", "spec.toml:2: [window] compact_at"},
		{"[window]\nmax = 10\n", "spec.toml:2: [window] max"},
		{"[window]\nmargin = -0.1\n", "spec.toml:2: [window] margin"},
		{"[storage]\nconversations = \"../x\"\n", "spec.toml:2: [storage] conversations"},
		{"[instructions]\nbasis = \"none\"\n", "spec.toml:2: [instructions] basis: no such section"},
		{"[instructions]\nbase = { source = \"a\", most = -1 }\n", "spec.toml:2: [instructions] base"},
		{"[model\n", "spec.toml:1:"},
		{"[model]\ntimeout = \"soon\"\n", "spec.toml:2: [model] timeout"},
		{"[model]\n\ntimeout = \"-1s\"\n", "spec.toml:3: [model] timeout"},
		{"[model]\ntimeout = \"25h\"\n", "spec.toml:2: [model] timeout"},
		{"[model]\ntimeout = 600\n", "spec.toml:2:"},
		{"[turn]\ntimeout = \"0s\"\n", "spec.toml:2: [turn] timeout"},
		{"[turn]\n\ntimeout = \"48h\"\n", "spec.toml:3: [turn] timeout"},
		{"[turn]\nlimit = \"1h\"\n", "spec.toml:2: unknown key turn.limit"},
	} {
		_, err := Parse("spec.toml", []byte(tc.spec))
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want ErrBadSpec naming %q", tc.spec, err, tc.want)
		}
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	got, err := Read(path)
	if err != nil || !reflect.DeepEqual(got, Defaults()) {
		t.Fatalf("missing file: %+v, %v", got, err)
	}
	s := Defaults()
	s.Model.Name = "ollama/qwen3:8b"
	s.Model.Timeout = Duration(90 * time.Second)
	s.Window.CompactAt = 0
	if err := Write(path, s); err != nil {
		t.Fatal(err)
	}
	got, err = Read(path)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, s)
	}
}
