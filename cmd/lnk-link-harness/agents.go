package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
)

// unit is one agent to serve: its name, home, key and address, and, from
// an agents file, its own environment.
type unit struct {
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
func (u unit) same(v unit) bool {
	return u.Name == v.Name && u.Home == v.Home && u.Listen == v.Listen && u.KeyFile == v.KeyFile &&
		(u.Env == nil) == (v.Env == nil) && maps.Equal(u.Env, v.Env)
}

// environ is the environment the agent of u is served in, from environ,
// the process's: with an env table, the process's variables less every
// LNK_ one, then the table's; without, the process's.
func (u unit) environ(environ []string) []string {
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

// errAgents comes when an agents file cannot be served as it reads; the
// error says where, by file and line.
var errAgents = errors.New("agents file")

// DefaultSleepAfter is how long an agent of an agents file answers nothing
// before it sleeps, unless [serve] sleep_after says otherwise.
const DefaultSleepAfter = 10 * time.Minute

// agentsFile is serve --agents' file as read.
type agentsFile struct {
	units      []unit
	sleepAfter time.Duration // 0: never
	maxTurns   int           // [serve] max_turns; 0: not said
}

// readAgents reads serve --agents' file, strictly: every agent needs a
// home and a key file, names are plain and each once, and an env table
// holds only Link's variables (LNK_…); [serve] sleep_after is a duration
// or "never". An error says the file's line.
func readAgents(path string) (agentsFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return agentsFile{}, fmt.Errorf("%w: %v", errAgents, err)
	}
	var f struct {
		Serve struct {
			SleepAfter *string `toml:"sleep_after"`
			MaxTurns   *int    `toml:"max_turns"`
		} `toml:"serve"`
		Agent []unit `toml:"agent"`
	}
	dec := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return agentsFile{}, fmt.Errorf("%w %s:%d: %v", errAgents, path, row, err)
		}
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			row, _ := sm.Errors[0].Position()
			return agentsFile{}, fmt.Errorf("%w %s:%d: %v", errAgents, path, row, sm.Errors[0].Error())
		}
		return agentsFile{}, fmt.Errorf("%w %s: %v", errAgents, path, err)
	}
	if len(f.Agent) == 0 {
		return agentsFile{}, fmt.Errorf("%w %s names no [[agent]]", errAgents, path)
	}
	// An env table, even empty, is the agent's whole environment: seen
	// in the file as read loosely, since an empty table decodes as none.
	var loose struct {
		Agent []map[string]any `toml:"agent"`
	}
	if err := toml.Unmarshal(b, &loose); err != nil {
		return agentsFile{}, fmt.Errorf("%w %s: %v", errAgents, path, err)
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
			return fmt.Errorf("%w %s:%d: agent %d: %s", errAgents, path, u.line, i+1, fmt.Sprintf(format, args...))
		}
		if u.Home == "" || u.KeyFile == "" {
			return agentsFile{}, bad("needs home and key_file")
		}
		if u.Listen == "" {
			u.Listen = "127.0.0.1:0"
		}
		name := nameOf(*u)
		if err := home.Plain(name); err != nil {
			return agentsFile{}, bad("name %q: %v", name, err)
		}
		if at, twice := names[name]; twice {
			return agentsFile{}, bad("%q is named on line %d too", name, at)
		}
		names[name] = u.line
		for k := range u.Env {
			if !strings.HasPrefix(k, "LNK_") || strings.ContainsAny(k, "= \t\n") {
				return agentsFile{}, bad("env %q: only Link's variables (LNK_…) are an agent's own", k)
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
			return agentsFile{}, fmt.Errorf("%w %s:%d: [serve] sleep_after %q: want a duration over 0 (\"10m\") or \"never\"", errAgents, path, keyLine(b, "sleep_after"), *v)
		default:
			sleepAfter = d
		}
	}
	maxTurns := 0
	if v := f.Serve.MaxTurns; v != nil {
		if *v < 1 {
			return agentsFile{}, fmt.Errorf("%w %s:%d: [serve] max_turns %d: want 1 or more", errAgents, path, keyLine(b, "max_turns"), *v)
		}
		maxTurns = *v
	}
	return agentsFile{units: f.Agent, sleepAfter: sleepAfter, maxTurns: maxTurns}, nil
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

// shared is what the agents of one process share, built in serve: the
// process's environment, logger, stop, warm cache, bound on turns and
// client of the model proxy.
type shared struct {
	environ []string         // the process's environment
	log     *slog.Logger     //
	ending  context.Context  // done once a graceful stop's grace is over
	warm    *warm.Cache      // what turns keep for their conversations' next
	turns   *budget.Turns    // the turns in flight, bounded
	model   *http.Client     // the model proxy's client, its idle connections the process's
	tools   *http.Client     // the tool servers' client, its idle connections the process's
	facts   *facts.Cache     // the user's model facts, read once for every agent that shares LNK_HOME
	metrics *metrics.Process // the histograms every agent's times count into
}

// closeIdle closes the idle connections the agents share, to the model
// proxy and to tool servers.
func (sh *shared) closeIdle() {
	if sh.model != nil {
		sh.model.CloseIdleConnections()
	}
	if sh.tools != nil {
		sh.tools.CloseIdleConnections()
	}
}

// agent makes the served agent of u, in the process's environment as
// u.environ makes it its own, and returns it with its own opener, reaching
// the store bridge its environment names (or each driver's program),
// timing its fsyncs into the agent's metrics and logging its drivers'
// starts; closing the returned Closer lets go of what it holds. It holds
// no descriptor: its home is locked by each turn that uses it (see
// turn.Runner), so an agent, awake or asleep, holds its listener alone.
// Nothing of one agent is another's but the process's model client,
// whose connections go to the model proxy each request proves itself to
// with its own key: its tool servers and their sessions and its store's
// connections are its own. sh.warm, the process's, keeps what its turns
// composed between them.
func (u unit) agent(sh *shared) (server.Agent, io.Closer, error) {
	dir, err := filepath.Abs(u.Home)
	if err != nil {
		return server.Agent{}, nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return server.Agent{}, nil, fmt.Errorf("home %s is not a folder", u.Home)
	}
	key := u.key
	if u.KeyFile != "" {
		if key, err = readKey(u.KeyFile); err != nil {
			return server.Agent{}, nil, err
		}
	}
	name := u.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	if err := home.Plain(name); err != nil {
		return server.Agent{}, nil, fmt.Errorf("agent name %q: %w", name, err)
	}
	env := u.environ(sh.environ)
	getenv := lookup(env)
	own, err := stores.FromEnv(getenv)
	if err != nil {
		return server.Agent{}, nil, fmt.Errorf("agent %s: %w", name, err)
	}
	if u.store != "" {
		own.Bridge, own.BridgeKey = u.store, []byte(key)
	}
	if err := home.Serving(dir); err != nil {
		return server.Agent{}, nil, err
	}
	agent := home.Agent{Name: name, Dir: dir}
	servers, _ := tools.FromEnviron(env) // a variable that names no usable tool offers none
	m := &metrics.Agent{Name: name, Process: sh.metrics}
	own.Synced, own.Log, own.Environ = m.Synced, sh.log, env
	set := tools.New(agent, servers, tools.Options{Log: sh.log, HTTP: sh.tools})
	r := &turn.Runner{
		Agent: agent, Getenv: getenv, Open: own.Open, HTTP: sh.model, Metrics: m, Log: sh.log, Stop: sh.ending,
		Tools: set, Settings: u.settings, Warm: sh.warm, Turns: sh.turns, HoldHome: true,
	}
	if _, own := u.Env["LNK_HOME"]; !own {
		r.Facts = sh.facts // the process's LNK_HOME, and so its model facts
	}
	// What its turns kept goes first: it holds conversations its opener opened.
	owned := closers{closeFunc(r.Rest), own, closeFunc(set.Close)}
	if err := ready(r, getenv, own); err != nil {
		owned.Close()
		return server.Agent{}, nil, err
	}
	return server.Agent{Key: key, Runner: r}, owned, nil
}

// transport is the process's pool of connections to its agents' tool
// servers, on net/http, whose every part mcp-go's clients use. A kept MCP
// session is its server's, named by its session id, not a connection's, so
// agents may share the pool: its idle connections are the process's, at
// most budget.MaxIdleTools, not an agent's each.
func transport() *http.Transport {
	return &http.Transport{Proxy: nil, MaxIdleConns: budget.MaxIdleTools, MaxIdleConnsPerHost: budget.MaxIdleTools, IdleConnTimeout: 30 * time.Second}
}

// closeFunc is a Closer calling itself.
type closeFunc func()

func (f closeFunc) Close() error { f(); return nil }
