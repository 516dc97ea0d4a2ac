package fleet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
)

// Unit is one agent to serve: its name, home, key and address, and, from
// an agents file, its own environment.
type Unit struct {
	Name    string `toml:"name"`
	Home    string `toml:"home"`
	Listen  string `toml:"listen"`
	KeyFile string `toml:"key_file"`
	// Env, when the agent's entry has an env table, is the agent's whole
	// environment of Link's variables (LNK_MEMORY, LNK_TOOL_<NAME>,
	// LNK_STORE_BRIDGE, LNK_MODEL_PROXY…): none of the process's LNK_
	// variables reaches it, and none of another agent's. Without the table
	// (nil), the agent is served in the process's environment.
	Env map[string]string `toml:"env"`

	line int // the line of its [[agent]] in the agents file; 0 from flags

	// A blank unit's binding (see blank.go) holds these in memory: the
	// key made for it (KeyFile is then empty), the settings it was bound
	// with (nil: config.json is read at each turn) and the store bridge
	// its conversations go through, proved with that key ("": as the
	// environment says).
	key      string
	settings *settings.Settings
	store    string
}

// same says whether u and v serve one agent the same way, so a reload
// leaves it untouched.
func (u Unit) same(v Unit) bool {
	return u.Name == v.Name && u.Home == v.Home && u.Listen == v.Listen && u.KeyFile == v.KeyFile &&
		(u.Env == nil) == (v.Env == nil) && maps.Equal(u.Env, v.Env)
}

// environ is the environment the agent of u is served in, from environ,
// the process's: with an env table, the process's variables less every
// LNK_ one, then the table's; without, the process's.
func (u Unit) environ(environ []string) []string {
	if u.Env == nil {
		return environ
	}
	out := make([]string, 0, len(environ)+len(u.Env))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "LNK_") {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(u.Env)) {
		out = append(out, k+"="+u.Env[k])
	}
	return out
}

// ErrAgents comes when an agents file cannot be served as it reads; the
// error says where, by file and line.
var ErrAgents = errors.New("agents file")

// DefaultSleepAfter is how long an agent of an agents file answers nothing
// before it sleeps, unless [serve] sleep_after says otherwise.
const DefaultSleepAfter = 10 * time.Minute

// AgentsFile is serve --agents' file as read.
type AgentsFile struct {
	Units      []Unit
	SleepAfter time.Duration // 0: never
	MaxTurns   int           // [serve] max_turns; 0: not said
}

// ReadAgents reads serve --agents' file, strictly: every agent needs a
// home and a key file, names are plain and each once, and an env table
// holds only Link's variables (LNK_…); [serve] sleep_after is a duration
// or "never". An error says the file's line.
func ReadAgents(path string) (AgentsFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return AgentsFile{}, fmt.Errorf("%w: %v", ErrAgents, err)
	}
	var f struct {
		Serve struct {
			SleepAfter *string `toml:"sleep_after"`
			MaxTurns   *int    `toml:"max_turns"`
		} `toml:"serve"`
		Agent []Unit `toml:"agent"`
	}
	dec := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return AgentsFile{}, fmt.Errorf("%w %s:%d: %v", ErrAgents, path, row, err)
		}
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			row, _ := sm.Errors[0].Position()
			return AgentsFile{}, fmt.Errorf("%w %s:%d: %v", ErrAgents, path, row, sm.Errors[0].Error())
		}
		return AgentsFile{}, fmt.Errorf("%w %s: %v", ErrAgents, path, err)
	}
	if len(f.Agent) == 0 {
		return AgentsFile{}, fmt.Errorf("%w %s names no [[agent]]", ErrAgents, path)
	}
	// An env table, even empty, is the agent's whole environment: seen
	// in the file as read loosely, since an empty table decodes as none.
	var loose struct {
		Agent []map[string]any `toml:"agent"`
	}
	if err := toml.Unmarshal(b, &loose); err != nil {
		return AgentsFile{}, fmt.Errorf("%w %s: %v", ErrAgents, path, err)
	}
	for i, a := range loose.Agent {
		if _, has := a["env"]; has && i < len(f.Agent) && f.Agent[i].Env == nil {
			f.Agent[i].Env = map[string]string{}
		}
	}
	lines := agentLines(b)
	names := map[string]int{}
	for i := range f.Agent {
		u := &f.Agent[i]
		if i < len(lines) {
			u.line = lines[i]
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w %s:%d: agent %d: %s", ErrAgents, path, u.line, i+1, fmt.Sprintf(format, args...))
		}
		if u.Home == "" || u.KeyFile == "" {
			return AgentsFile{}, bad("needs home and key_file")
		}
		if u.Listen == "" {
			u.Listen = "127.0.0.1:0"
		}
		name := nameOf(*u)
		if err := home.Plain(name); err != nil {
			return AgentsFile{}, bad("name %q: %v", name, err)
		}
		if at, twice := names[name]; twice {
			return AgentsFile{}, bad("%q is named on line %d too", name, at)
		}
		names[name] = u.line
		for k := range u.Env {
			if !strings.HasPrefix(k, "LNK_") || strings.ContainsAny(k, "= \t\n") {
				return AgentsFile{}, bad("env %q: only Link's variables (LNK_…) are an agent's own", k)
			}
		}
	}
	sleepAfter := DefaultSleepAfter
	if v := f.Serve.SleepAfter; v != nil {
		d, err := time.ParseDuration(*v)
		switch {
		case *v == "never":
			sleepAfter = 0
		case err != nil || d <= 0:
			return AgentsFile{}, fmt.Errorf("%w %s:%d: [serve] sleep_after %q: want a duration over 0 (\"10m\") or \"never\"", ErrAgents, path, keyLine(b, "sleep_after"), *v)
		default:
			sleepAfter = d
		}
	}
	maxTurns := 0
	if v := f.Serve.MaxTurns; v != nil {
		if *v < 1 {
			return AgentsFile{}, fmt.Errorf("%w %s:%d: [serve] max_turns %d: want 1 or more", ErrAgents, path, keyLine(b, "max_turns"), *v)
		}
		maxTurns = *v
	}
	return AgentsFile{Units: f.Agent, SleepAfter: sleepAfter, MaxTurns: maxTurns}, nil
}

// nameOf is the name u serves its agent by: its name, or its home
// folder's.
func nameOf(u Unit) string {
	if u.Name != "" {
		return u.Name
	}
	return filepath.Base(u.Home)
}

// keyLine is the line where key is first set in an agents file, or 0.
func keyLine(b []byte, key string) int {
	for n, l := range strings.Split(string(b), "\n") {
		if k, _, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == key {
			return n + 1
		}
	}
	return 0
}

// agentLines is the line of each [[agent]] header in an agents file, in
// order.
func agentLines(b []byte) []int {
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "[[") && strings.TrimSpace(strings.Trim(l, "[] \t")) == "agent" {
			lines = append(lines, n)
		}
	}
	return lines
}
