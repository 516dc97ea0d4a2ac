package settings

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// homeDir is the agent's home the specs of these tests are read for.
const homeDir = "/srv/lnk/agents/ada"

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
`), homeDir)
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
		_, err := Parse("spec.toml", []byte(tc.spec), homeDir)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want ErrBadSpec naming %q", tc.spec, err, tc.want)
		}
	}
}

// A key or a source a turn would not act on is refused, naming the key,
// its line, and what to write instead; each form of a source a turn reads
// is taken.
func TestParseRefusesWhatWouldNotAct(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []string // the line and what is named; nil: taken
	}{
		// Sources a turn reads.
		{"[instructions]\npersona = \"instructions/ada.md\"\n", nil},
		{"[instructions]\npersona = \"/srv/lnk/agents/ada/instructions/ada.md\"\n", nil},
		{"[instructions]\npersona = \"files/../instructions/ada.md\"\n", nil},
		{"[instructions]\nnow = \"none\"\n", nil},
		{"[instructions]\nnotes = { most = 1024 }\n", nil},
		{"[instructions.persona]\nsource = \"instructions/ada.md\"\nmost = 100\n", nil},
		{"[model]\nanswer = 4096\n[window]\nmax = 100000\n", nil},
		// A link is never fetched.
		{"[instructions]\n\npersona = \"https://example.com/ada.md\"\n",
			[]string{"spec.toml:3: [instructions] persona", "is a link", "save what it holds in the agent's home and name that file"}},
		{"[instructions]\nnow = { source = \"file:///srv/lnk/agents/ada/now.md\", most = 100 }\n",
			[]string{"spec.toml:2: [instructions] now", "is a link"}},
		{"[instructions.owner]\nsource = \"http://intranet/owner.md\"\n",
			[]string{"spec.toml:1: [instructions] owner", "is a link"}},
		// A file outside the home, or the home itself, is never read.
		{"[instructions]\npersona = \"/etc/motd\"\n",
			[]string{"spec.toml:2: [instructions] persona", "/etc/motd is not a file in the agent's home", "name a path relative to the home"}},
		{"[instructions]\npersona = \"../bob/instructions/persona.md\"\n",
			[]string{"spec.toml:2: [instructions] persona", "not a file in the agent's home"}},
		{"[instructions]\npersona = \"/srv/lnk/agents/ada-old/persona.md\"\n",
			[]string{"spec.toml:2: [instructions] persona", "not a file in the agent's home"}},
		{"[instructions]\npersona = \".\"\n", []string{"spec.toml:2: [instructions] persona", "not a file in the agent's home"}},
		// A most of a section left out, and a section saying nothing.
		{"[instructions]\nnow = { source = \"none\", most = 100 }\n",
			[]string{"spec.toml:2: [instructions] now", "most does nothing for a section left out", "drop most"}},
		{"[instructions]\nnow = {}\n", []string{"spec.toml:2: [instructions] now", "neither a source nor a most"}},
		// A key another key overrides.
		{"[model]\nanswer = 4096\n\n[window]\nanswer = 0.2\n",
			[]string{"spec.toml:5: [window] answer", "does nothing while [model] answer is set", "keep one of the two"}},
		{"[window]\nmax = 100000\nunknown = 8192\n",
			[]string{"spec.toml:3: [window] unknown", "does nothing while [window] max is set", "keep one of the two"}},
	} {
		_, err := Parse("spec.toml", []byte(tc.spec), homeDir)
		if tc.want == nil {
			if err != nil {
				t.Errorf("Parse(%q): %v; want it taken", tc.spec, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadSpec) {
			t.Errorf("Parse(%q) = %v; want ErrBadSpec", tc.spec, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q) = %v; want it to say %q", tc.spec, err, w)
			}
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
