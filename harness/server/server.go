package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
)

// MaxBodyBytes is the largest request body taken.
const MaxBodyBytes = 1 << 20

// MaxHeaderBytes is the most a request's headers may hold.
const MaxHeaderBytes = 32 << 10

// Agent is one agent the server answers for.
type Agent struct {
	Runner *turn.Runner
	Key    string // the agent's key; requests carry it as a bearer token
}

// Options are a server's collaborators, built in main.
type Options struct {
	// Log gets a line for each refusal and each answer that could not be
	// kept for _link/recover; nil logs nothing. A runner with no logger of
	// its own is given this one.
	Log *slog.Logger

	// FreeMemory, when not nil, is called once the process has run no
	// turn for IdleFree after its last turn ended, so the memory a burst
	// of turns took goes back to the system rather than staying with an
	// idle process. Main passes a function that collects twice (emptying
	// the sync.Pools) and calls debug.FreeOSMemory.
	FreeMemory func()
	// IdleFree is how long no turn runs before the process lets go of
	// what its turns held: the model proxy's idle connections are closed
	// and FreeMemory is called; 0 means DefaultIdleFree.
	IdleFree time.Duration

	// Turns, when not nil, is the process's bound on turns in flight, its
	// count and bound written on /metrics.
	Turns *budget.Turns

	// Metrics is the process's histograms, which every agent's metrics
	// count into; nil: the server makes its own.
	Metrics *metrics.Process

	// CloseIdle, when not nil, is called with FreeMemory's timing, whether
	// or not FreeMemory is set: main passes a function closing the idle
	// connections its agents share (to tool servers).
	CloseIdle func()

	// Warm, when not nil, is what the process's turns keep of their
	// conversations between turns (the agents' runners share it): let go
	// of once the process has run no turn for IdleFree, with the rest of
	// what turns held, so an idle process holds no conversation open.
	Warm *warm.Cache
}

// DefaultIdleFree is how long a server runs no turn before it closes its
// idle connections to the model proxy and gives its freed memory back:
// past a pause between two turns of one conversation, so a steady trickle
// of turns is not a dial and a collection after each.
const DefaultIdleFree = 2 * time.Second

// Server answers the HTTP API of API.md for its agents. It is safe for
// concurrent use. Its zero value serves no agent; use New.
type Server struct {
	log      *slog.Logger
	refusals metrics.Refusals
	proc     *metrics.Process // the histograms of every agent served
	bound    *budget.Turns    // the turns in flight, for /metrics; nil: not bounded
	turns    sync.WaitGroup   // turns running, including those whose caller left
	active   atomic.Int64     // turns running now
	stopping atomic.Bool      // Stop was called: not ready, no new turn

	freeMemory func()
	closeIdle  func()
	idleFree   time.Duration
	warm       *warm.Cache
	crew       crew             // the goroutines turns run on
	now        func() time.Time // the clock of what /metrics counts now and then

	freeMu sync.Mutex
	// guarded by freeMu
	freeTimer *time.Timer // calls release once no turn ran for idleFree; reset at each idle

	mu sync.RWMutex
	// guarded by mu
	agents map[string]*served
}

type served struct {
	Agent
	keyHash [32]byte
	turns   sync.WaitGroup // the agent's turns running, those whose caller left too
	active  atomic.Int64   // how many of them
	wait    waitCount      // its answers waiting at _link/recover, as last counted
}

// New returns a server answering for agents, each by its runner's agent
// name. A runner with no metrics is given its own.
func New(o Options, agents ...Agent) (*Server, error) {
	s := &Server{agents: map[string]*served{}, log: o.Log, freeMemory: o.FreeMemory, closeIdle: o.CloseIdle, idleFree: o.IdleFree, warm: o.Warm, now: time.Now}
	if s.idleFree <= 0 {
		s.idleFree = DefaultIdleFree
	}
	s.bound = o.Turns
	if s.proc = o.Metrics; s.proc == nil {
		s.proc = new(metrics.Process)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, a := range agents {
		if err := s.Add(a); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add answers for agent a from now on, by its runner's agent name: an
// agent joining a process that runs. A runner with no metrics is given its
// own.
func (s *Server) Add(a Agent) error {
	name := a.Runner.Agent.Name
	if name == "" || a.Key == "" {
		return fmt.Errorf("server: agent %q needs a name and a key", name)
	}
	if a.Runner.Metrics == nil {
		a.Runner.Metrics = &metrics.Agent{Name: name, Process: s.proc}
	}
	if a.Runner.Log == nil {
		a.Runner.Log = s.log
	}
	if a.Runner.Untold == nil {
		r := a.Runner
		a.Runner.Untold = func(thread string, ans turn.Answer) { s.keepCrashed(r, thread, ans) }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.agents[name]; dup {
		return fmt.Errorf("server: agent %q twice", name)
	}
	s.agents[name] = &served{Agent: a, keyHash: sha256.Sum256([]byte(a.Key))}
	return nil
}

// Remove stops answering for the agent name, an agent leaving: requests
// naming it are refused as for one never served, and Remove returns once
// its turns have ended, those whose caller left too, so what the agent
// holds (its home's lock, its drivers) can be let go of. Its listener is
// the caller's to shut down first, so no message already asked is cut off.
func (s *Server) Remove(name string) {
	s.mu.Lock()
	a := s.agents[name]
	delete(s.agents, name)
	s.mu.Unlock()
	if a != nil {
		a.turns.Wait()
		a.Runner.Rest()
	}
}

// Busy says whether a turn of the agent name runs now, one whose caller
// left too.
func (s *Server) Busy(name string) bool {
	a := s.agent(name)
	return a != nil && a.active.Load() > 0
}

// agent is the agent served by name, or nil.
func (s *Server) agent(name string) *served {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.agents[name]
}

// all is a snapshot of the agents served now.
func (s *Server) all() []*served {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*served, 0, len(s.agents))
	for _, a := range s.agents {
		out = append(out, a)
	}
	return out
}

// idle ends a turn's share of the process: when it was the last turn
// running, the process lets go of what its turns held once it stays idle
// (see releaseLater). The model proxy's connections stay open between
// turns, so a turn that follows another, of any agent, does not dial
// again.
func (s *Server) idle() {
	if s.active.Add(-1) != 0 {
		return
	}
	s.releaseLater()
}

// releaseLater calls release once no turn has run for idleFree: each idle
// moment puts it off again, so a burst is released once, after its end,
// and turns that keep coming keep their connections and are not each
// followed by a collection.
func (s *Server) releaseLater() {
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	if s.freeTimer == nil {
		s.freeTimer = time.AfterFunc(s.idleFree, s.release)
		return
	}
	s.freeTimer.Reset(s.idleFree)
}

// release closes the model proxy's idle connections and lets go of what
// turns kept of their conversations, so an idle agent holds no
// connection, no goroutine reading one and no open file, and gives the
// freed memory back; unless a turn runs again: its end puts the
// next call off.
func (s *Server) release() {
	if s.active.Load() != 0 {
		return
	}
	s.warm.Release()
	s.crew.rest()
	closed := map[*http.Client]bool{} // the agents of a process share theirs
	for _, a := range s.all() {
		a.Runner.Rest() // what it kept of its files and facts too, made again by its next turn
		if hc := a.Runner.HTTP; hc != nil && !closed[hc] {
			hc.CloseIdleConnections()
			closed[hc] = true
		}
	}
	if s.closeIdle != nil {
		s.closeIdle()
	}
	if s.freeMemory != nil {
		s.freeMemory()
	}
	s.log.Debug("idle: what the turns held let go of")
}

// Rest ends the goroutines kept waiting for turns (see crew): a process
// whose agents all sleep keeps none. Release, once no turn ran for
// IdleFree, does it too.
func (s *Server) Rest() { s.crew.rest() }

// Wait waits for every turn started to end, those whose caller left too.
// A graceful stop shuts the HTTP server down first, then waits here.
func (s *Server) Wait() { s.turns.Wait() }

// Running returns how many turns run now.
func (s *Server) Running() int64 { return s.active.Load() }

// ErrStopping comes when a message would begin a turn in a process that is
// stopping (Stop): nothing of it is written, and sending it again, to this
// process's successor or another, is answered. A server answers it 503
// with Retry-After.
var ErrStopping = errors.New("server: the process is stopping")

// Stop tells the server its process is stopping gracefully: from now on
// /readyz answers 503, and a message is refused 503 with Retry-After
// before anything of it is written, while the turns running go on and
// their callers are answered.
func (s *Server) Stop() { s.stopping.Store(true) }
