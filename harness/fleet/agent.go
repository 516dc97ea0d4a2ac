package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/store"
)

// Shared is what the agents of one process share, built in main: the
// process's environment, logger, warm cache, bound on turns, clients of the
// model proxy and tool servers, and how an agent's conversations and key
// are reached.
type Shared struct {
	Environ []string         // the process's environment, as main read it
	Log     *slog.Logger     // the process's one logger
	Warm    *warm.Cache      // what turns keep for their conversations' next; nil keeps nothing
	Turns   *budget.Turns    // the turns in flight, bounded; nil: no bound
	Model   *http.Client     // the model proxy's client, its idle connections the process's
	Models  *model.Clients   // the model clients, one for each proxy and key the agents name
	Tools   *http.Client     // the tool servers' client, its idle connections the process's
	Facts   *facts.Cache     // the user's model facts, read once for every agent that shares LNK_HOME
	Metrics *metrics.Process // the histograms every agent's times count into
	Tracer  *trace.Tracer    // every turn's spans; nil traces nothing
	Ends    *ending.Watcher  // reads the running turns' end records, for another process's /end

	// Stores makes the opener of an agent's conversations each time the
	// agent is made (it joins, or wakes): main's one switch of the ways a
	// conversation is kept.
	Stores func(Reach) (Opener, error)
	// ReadKey reads a key file's one key, refusing one others may read.
	ReadKey func(path string) (string, error)
}

// CloseIdle closes the idle connections the agents share, to the model
// proxy and to tool servers.
func (sh *Shared) CloseIdle() {
	if sh.Model != nil {
		sh.Model.CloseIdleConnections()
	}
	if sh.Tools != nil {
		sh.Tools.CloseIdleConnections()
	}
}

// Opener opens an agent's conversations the way their folders say they are
// kept (log, compact, or a driver's), and keeps what it reached, a
// driver's program or the store bridge, until Close.
type Opener interface {
	// Open opens the conversation in folder dir; kind, the spec's
	// [storage] conversations, says how a new one starts.
	Open(dir, kind string) (store.Conversation, error)
	// Check says whether kind is a way of keeping the conversations of
	// the agent at home that this process reaches.
	Check(home, kind string) error
	io.Closer
}

// Reach is what an agent's Opener is made from: the agent's environment,
// a blank unit's binding's store bridge, and where its times and drivers'
// starts go.
type Reach struct {
	Getenv  func(string) string // the agent's environment, one name at a time
	Environ []string            // the same whole, for a driver's program
	// Bridge, when set, is the store bridge its conversations go through,
	// proved with BridgeKey, whatever the environment says.
	Bridge    string
	BridgeKey []byte
	Synced    func(time.Duration) // each fsync's time
	Log       *slog.Logger        // a driver's start and restart
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
// connections are its own. sh.Warm, the process's, keeps what its turns
// composed between them; ending, once done, ends its turns.
func (u Unit) agent(sh *Shared, ending context.Context) (server.Agent, io.Closer, error) {
	dir, err := filepath.Abs(u.Home)
	if err != nil {
		return server.Agent{}, nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return server.Agent{}, nil, fmt.Errorf("home %s is not a folder", u.Home)
	}
	key := u.key
	if u.KeyFile != "" {
		if key, err = sh.ReadKey(u.KeyFile); err != nil {
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
	env := u.environ(sh.Environ)
	getenv := Lookup(env)
	m := &metrics.Agent{Name: name, Process: sh.Metrics}
	reach := Reach{Getenv: getenv, Environ: env, Synced: m.Synced, Log: sh.Log}
	if u.store != "" {
		reach.Bridge, reach.BridgeKey = u.store, []byte(key)
	}
	own, err := sh.Stores(reach)
	if err != nil {
		return server.Agent{}, nil, fmt.Errorf("agent %s: %w", name, err)
	}
	if err := home.Serving(dir); err != nil {
		return server.Agent{}, nil, err
	}
	agent := home.Agent{Name: name, Dir: dir}
	servers, _ := tools.FromEnviron(env) // a variable that names no usable tool offers none
	set := tools.New(agent, servers, tools.Options{Log: sh.Log, HTTP: sh.Tools})
	r := &turn.Runner{
		Agent: agent, Getenv: getenv, Open: own.Open, HTTP: sh.Model, Metrics: m, Log: sh.Log, Stop: ending,
		Tools: set, Settings: u.settings, HoldHome: true,
		Process: turn.Process{Warm: sh.Warm, Turns: sh.Turns, Tracer: sh.Tracer, Ends: sh.Ends, Models: sh.Models},
	}
	if _, own := u.Env["LNK_HOME"]; !own {
		r.Facts = sh.Facts // the process's LNK_HOME, and so its model facts
	}
	// What its turns kept goes first: it holds conversations its opener opened.
	owned := closers{closeFunc(r.Rest), own, closeFunc(set.Close)}
	if err := ready(r, getenv, own); err != nil {
		owned.Close()
		return server.Agent{}, nil, err
	}
	return server.Agent{Key: key, Runner: r}, owned, nil
}

// ready says why the agent r serves cannot take a turn as its settings
// stand, before it is served: its settings cannot be read, its
// conversations' kind is not one opener keeps, or no model proxy reaches
// its model's provider (or its fallback's). Each turn reads the settings
// again, and fails with the same error when one of these comes later.
func ready(r *turn.Runner, getenv func(string) string, opener Opener) error {
	var s settings.Settings
	if r.Settings != nil {
		s = *r.Settings
	} else {
		path, err := r.Agent.Path(home.Config, "")
		if err != nil {
			return err
		}
		if s, err = settings.Read(path); err != nil {
			return fmt.Errorf("agent %s: %w", r.Agent.Name, err)
		}
	}
	if err := opener.Check(r.Agent.Dir, s.Storage.Conversations); err != nil {
		return fmt.Errorf("agent %s: [storage] conversations: %w", r.Agent.Name, err)
	}
	factsPath, err := facts.UserPath(getenv)
	if err != nil {
		return err
	}
	book, err := facts.Load(factsPath)
	if err != nil {
		return err
	}
	for _, m := range []struct {
		what string
		settings.Model
	}{{"model", s.Model}, {"fallback model", settings.Model{Name: s.Model.Fallback}}} {
		if m.Name == "" {
			continue
		}
		provider := m.Provider
		if provider == "" {
			f := book.Model(m.Name)
			provider = f.Provider.Value
		}
		if _, err := model.New(provider, getenv, nil); err != nil {
			return fmt.Errorf("agent %s: %s %s: %w", r.Agent.Name, m.what, m.Name, err)
		}
	}
	return nil
}

// Lookup reads environ, a copy of the environment as os.Environ gives it:
// the last setting of a name counts. It looks through environ at each
// call, as a turn asks for few names: an awake agent keeps no map of the
// whole environment (some 2 KiB each).
func Lookup(environ []string) func(string) string {
	return func(k string) string {
		for i := len(environ) - 1; i >= 0 && k != ""; i-- {
			if v, ok := strings.CutPrefix(environ[i], k); ok && len(v) > 0 && v[0] == '=' {
				return v[1:]
			}
		}
		return ""
	}
}

// closers closes each of its Closers, in order.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// closeFunc is a Closer calling itself.
type closeFunc func()

func (f closeFunc) Close() error { f(); return nil }
