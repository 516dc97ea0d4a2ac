package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agents file that cannot be served is refused with its line.
func TestReadAgentsRefuses(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"[[agent]]\nhome = \"h\"\nkey_file = \"k\"\n\n[[agent]]\nname = \"h\"\nhome = \"i\"\nkey_file = \"k\"\n", `:5: agent 2: "h" is named on line 1 too`},
		{"[[agent]]\nhome = \"h\"\nkey_file = \"k\"\n[agent.env]\nPATH = \"/bin\"\n", `:1: agent 1: env "PATH": only Link's variables`},
		{"\n[[agent]]\nname = \"x\"\nkey_file = \"k\"\n", ":2: agent 1: needs home and key_file"},
		{"[[agent]]\nhome = \"h\"\nkey_file = \"k\"\nport = 3\n", ":4: "},
		{"[[agent]]\nname = \"a/b\"\nhome = \"h\"\nkey_file = \"k\"\n", `:1: agent 1: name "a/b"`},
		{"", "names no [[agent]]"},
		{"[serve]\nsleep_after = \"soon\"\n[[agent]]\nhome = \"h\"\nkey_file = \"k\"\n", `:2: [serve] sleep_after "soon"`},
		{"[serve]\nsleep_after = \"0s\"\n[[agent]]\nhome = \"h\"\nkey_file = \"k\"\n", `:2: [serve] sleep_after "0s"`},
	} {
		path := filepath.Join(t.TempDir(), "agents.toml")
		os.WriteFile(path, []byte(tc.file), 0o600)
		_, err := ReadAgents(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrAgents) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "agents.toml")
	os.WriteFile(path, []byte("[[agent]]\nhome = \"h\"\nkey_file = \"k\"\n[agent.env]\n\n[[agent]]\nhome = \"i\"\nkey_file = \"k\"\n"), 0o600)
	file, err := ReadAgents(path)
	if err != nil {
		t.Fatal(err)
	}
	units := file.Units
	if file.SleepAfter != DefaultSleepAfter {
		t.Errorf("sleep_after %v unset, want %v", file.SleepAfter, DefaultSleepAfter)
	}
	if units[0].Env == nil || units[1].Env != nil {
		t.Errorf("an empty env table must be an environment of its own, and none a table: %v %v", units[0].Env, units[1].Env)
	}
	if env := units[0].environ([]string{"PATH=/bin", "LNK_MEMORY=http://m"}); strings.Join(env, " ") != "PATH=/bin" {
		t.Errorf("an empty env table's environment: %q", env)
	}
}
