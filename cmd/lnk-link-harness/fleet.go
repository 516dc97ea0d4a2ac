package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/server"
)

// fleet is the agents a process serves, each on its own listener, joining
// and leaving while it runs. Its methods are called from serve's one loop,
// never at once; stopping an agent runs on beside it.
type fleet struct {
	shared
	plan   budget.Plan  // the descriptors the process is sized for
	pool   *budget.Pool // callers' connections, and what caches keep open
	srv    *server.Server
	out    io.Writer     // where "listening on" lines go
	named  bool          // whether a listening line names its agent
	grace  time.Duration // how long a stopping agent's connections are waited for, with stopMargin
	errc   chan error    // a listener's end other than a stop
	dozed  chan struct{} // a send (when there is room) each time an agent falls asleep
	waiter *waiter       // watches every agent's listener; nil: each has an accept loop
	conns  *conns        // the one server of every agent's connections
	dozer  dozer         // puts agents to sleep when their time comes
	quiet  quietGC       // the collector stopped while every agent sleeps

	// sleepAfter is how long an agent answers nothing before it sleeps
	// (in nanoseconds); 0 never. A reload sets it.
	sleepAfter atomic.Int64

	running map[string]*running // by agent name
	leaving sync.WaitGroup      // agents stopping
}

// running is one agent served: its unit, its listener, and, while it is
// awake, what it holds. Asleep, it holds its listener alone: its
// runner, tool sessions, connections, drivers and home's lock are let go
// of, and made again by the first request that comes. It is safe for
// concurrent use.
type running struct {
	f     *fleet
	unit  unit
	name  string
	ln    *pausable
	inner http.Handler // the server's handler of the agent's address

	dueIndex int // its place among the dozer's sleeps coming, -1 when none is; guarded by f.dozer.mu

	leaving atomic.Bool // it leaves: its connections close once idle, and a new one at once
	// guarded by f.conns.mu
	conns   int           // its connections open
	drained chan struct{} // closed when its last connection closes, while it leaves

	mu sync.Mutex
	// guarded by mu
	held     io.Closer // what the agent holds awake; nil asleep
	inflight int       // requests being answered
	gen      int       // the sleep timer armed last; an earlier one does nothing
	stopped  bool      // it left: it never wakes again
	stale    bool      // its entry changed while it was busy: it sleeps once idle, to wake as the new one
}

// joining is an agent made and listening, not served yet.
type joining struct {
	unit  unit
	name  string
	held  io.Closer
	agent server.Agent
	ln    net.Listener
}

// prepare makes the agents of units and their listeners, serving none of
// them yet; on an error, what it made is let go of and nothing has
// changed.
func (f *fleet) prepare(units []unit) ([]*joining, error) {
	var made []*joining
	undo := func() {
		for _, j := range made {
			j.ln.Close()
			j.held.Close()
		}
	}
	for _, u := range units {
		a, held, err := u.agent(&f.shared)
		if err != nil {
			undo()
			return nil, where(u, err)
		}
		name := a.Runner.Agent.Name
		ln, err := net.Listen("tcp", u.Listen)
		if err != nil {
			held.Close()
			undo()
			return nil, where(u, fmt.Errorf("agent %s: %w", name, err))
		}
		made = append(made, &joining{unit: u, name: name, held: held, agent: a, ln: ln})
	}
	return made, nil
}

// where puts the agents file's line of u before err.
func where(u unit, err error) error {
	if u.line == 0 {
		return err
	}
	return fmt.Errorf("agents file line %d: %w", u.line, err)
}

// http1Only is every agent's protocol: an agent listens on plain TCP,
// where HTTP/2 would need h2c, which no caller speaks to it. Said, it also
// spares each agent's server the HTTP/2 set-up its first Serve makes (about
// 1 KiB an agent, kept while it sleeps).
var http1Only = func() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	return &p
}()

// join serves the agents prepare made, each printing where it listens.
func (f *fleet) join(js []*joining) error {
	if len(js) > 0 {
		f.quiet.stop() // they are awake
	}
	if f.conns == nil {
		f.conns = newConns(f.pool)
		f.pool.AddGiver(f.conns)
	}
	for i, j := range js {
		if err := f.srv.Add(j.agent); err != nil {
			for _, rest := range js[i:] {
				rest.ln.Close()
				rest.held.Close()
			}
			return err
		}
		r := &running{f: f, unit: j.unit, name: j.name, inner: f.srv.For(j.name), held: j.held, dueIndex: -1}
		r.ln = &pausable{TCPListener: j.ln.(*net.TCPListener), r: r, watched: f.waiter != nil}
		f.running[j.name] = r
		r.mu.Lock()
		r.arm()
		r.mu.Unlock()
		if f.named {
			fmt.Fprintf(f.out, "listening on %s for %s\n", j.ln.Addr(), j.name)
		} else {
			fmt.Fprintf(f.out, "listening on %s\n", j.ln.Addr())
		}
		r.listen()
	}
	return nil
}

// errPaused ends a watched listener's Accept once it took the connection
// the waiter woke it for, so the Serve returns and no goroutine of the
// agent waits on it.
var errPaused = errors.New("the listener waits on the waiter")

// errNoRoom ends a listener's Accept when the process has no room for
// another connection: the connection waits in the listener's queue, and
// the listener is served again once a connection closes (see wait).
var errNoRoom = errors.New("the listener waits for room")

// errNoDescriptor ends a listener's Accept when the process met its
// descriptor limit past what the pool counts: the listener is served again
// after noRoomRetry, never at once.
var errNoDescriptor = errors.New("the listener waits for a descriptor")

// pausable is an agent's listener. Watched (the process has a waiter), it
// has no accept loop of its own, awake or asleep: the waiter wakes it when
// a connection comes, Serve takes that one connection and returns, and the
// waiter watches it again. Close, as Serve calls it on return, leaves a
// watched listener open; leave closes it. Each connection takes its room
// in the process's pool before it is accepted.
type pausable struct {
	*net.TCPListener
	r       *running    // whose it is
	watched bool        // set before its first Serve, never changed
	took    atomic.Bool // this Serve took its one connection
	waiting atomic.Bool // this Serve ended for want of room: Close leaves the listener open
}

func (p *pausable) Accept() (net.Conn, error) {
	if p.watched && p.took.Swap(true) {
		return nil, errPaused
	}
	pool := p.r.f.pool
	if !pool.Take(1) {
		p.waiting.Store(true)
		return nil, errNoRoom
	}
	c, err := p.TCPListener.Accept()
	if err != nil {
		pool.Put(1)
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			// Past what the pool counts: a descriptor the budget does not
			// know of. Logged, and tried again once room comes or in a
			// while, never at once.
			p.r.f.log.Error("connection not accepted: no descriptor left", "agent", p.r.name, "error", err)
			p.waiting.Store(true)
			return nil, errNoDescriptor
		}
	}
	return c, err
}

func (p *pausable) Close() error {
	if p.watched || p.waiting.Load() {
		return nil
	}
	return p.TCPListener.Close()
}

// serve accepts the agent's connection the waiter saw coming, or, with no
// waiter, its connections until it stops.
func (r *running) serve() {
	err := r.f.conns.hs.Serve(r.ln)
	switch {
	case r.leaving.Load(): // its listener closed
	case errors.Is(err, errNoRoom):
		r.wait(true)
	case errors.Is(err, errNoDescriptor):
		r.wait(false)
	case errors.Is(err, errPaused):
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.leaving.Load() {
			return
		}
		if err := r.f.waiter.watch(r.ln.TCPListener, r.resume); err != nil {
			r.f.log.Warn("agent's listener not watched, accepting on", "agent", r.name, "error", err)
			r.ln.watched = false
			go r.serve()
		}
	default:
		select {
		case r.f.errc <- err:
		default: // the process is stopping for an earlier one
		}
	}
}

// wait serves the listener again once the pool has room for a connection
// (one closes: the pool is full of connections, as its caches gave back
// what they kept), or, for a descriptor the pool does not count, after
// noRoomRetry: its connection waits in the listener's queue meanwhile,
// and no goroutine of the agent waits with it.
func (r *running) wait(room bool) {
	if room {
		r.f.pool.Wait(r.resume)
		return
	}
	time.AfterFunc(noRoomRetry, r.resume)
}

// noRoomRetry is the longest a listener waits for room before it is tried
// again: a descriptor not counted by the pool may have come free.
const noRoomRetry = 100 * time.Millisecond

// listen starts taking the agent's connections: the waiter watches its
// listener, or, with no waiter, an accept loop runs.
func (r *running) listen() {
	if r.ln.watched {
		r.mu.Lock()
		err := r.f.waiter.watch(r.ln.TCPListener, r.resume)
		if err == nil {
			r.mu.Unlock()
			return
		}
		r.f.log.Warn("agent's listener not watched, accepting on", "agent", r.name, "error", err)
		r.ln.watched = false
		r.mu.Unlock()
	}
	go r.serve()
}

// resume accepts the connection that came to the agent's watched
// listener.
func (r *running) resume() {
	if r.leaving.Load() {
		return
	}
	r.ln.took.Store(false)
	r.ln.waiting.Store(false)
	r.serve()
}

// leave stops serving the agent name as a graceful stop does: its
// listener takes no new connection, each it has is answered until its
// client closes it, for the grace and a margin; then the agent's turns
// end (those whose caller left too) and what it holds is let go of. It
// runs on beside the caller; stopAll waits for it.
func (f *fleet) leave(name string) {
	r := f.running[name]
	if r == nil {
		return
	}
	delete(f.running, name)
	f.leaving.Add(1)
	go func() {
		defer f.leaving.Done()
		// No new connection: the waiter forgets its listener before it is
		// closed, and one a Serve took in between is closed at once.
		r.leaving.Store(true)
		if f.waiter != nil {
			f.waiter.forget(r.ln.TCPListener)
		}
		r.ln.TCPListener.Close()
		drained := f.conns.drained(r)
		f.conns.closeIdle(r, false)
		grace := time.NewTimer(f.grace + stopMargin)
		select {
		case <-drained:
			grace.Stop()
		case <-grace.C:
			f.log.Warn("agent leaving: connections closed past the grace", "agent", name, "connections", f.conns.count(r))
			f.conns.closeIdle(r, true) // their turns end with what the agent holds, below
		}
		r.mu.Lock()
		r.stopped = true
		r.disarm()
		held := r.held
		r.held = nil
		r.mu.Unlock()
		f.srv.Remove(name)
		if held != nil {
			held.Close()
		}
		f.log.Info("agent left", "agent", name)
	}()
}

// reload serves the agents file at path as it reads now: an agent no
// longer in it leaves, a new one joins, one whose entry changed takes it
// (see renew), and the others are untouched. A file that cannot be served
// (unreadable, malformed, an agent served moved to another address, a new
// or changed agent's home, key, settings or address not usable) changes
// nothing, and the error says why and where.
func (f *fleet) reload(path string) error {
	file, err := readAgents(path)
	if err != nil {
		return err
	}
	units := file.units
	plan, err := budget.Plan{Limit: f.plan.Limit, Agents: len(units), MaxTurns: file.maxTurns}.Sized()
	if err != nil {
		return fmt.Errorf("%w %s: %v", errAgents, path, err)
	}
	want := map[string]bool{}
	var join []unit
	changed := map[*running]unit{}
	for _, u := range units {
		name := nameOf(u)
		want[name] = true
		r := f.running[name]
		if r == nil {
			join = append(join, u)
			continue
		}
		was := r.entry()
		switch {
		case was.same(u):
		case was.Listen != u.Listen:
			return where(u, fmt.Errorf("agent %s moves from %s to %s: take it out of the file and send SIGHUP, then put it back", name, was.Listen, u.Listen))
		default:
			// Made once to see it can be, then let go of: it is made
			// again when it wakes.
			_, held, err := u.agent(&f.shared)
			if err != nil {
				return where(u, err)
			}
			held.Close()
			changed[r] = u
		}
	}
	js, err := f.prepare(join)
	if err != nil {
		return err
	}
	for r, u := range changed {
		r.renew(u)
	}
	var leave []string
	for name := range f.running {
		if !want[name] {
			leave = append(leave, name)
			f.leave(name)
		}
	}
	f.sleepAfter.Store(int64(file.sleepAfter)) // each agent's next timer
	f.plan = plan
	f.turns.SetMax(plan.MaxTurns)
	f.pool.Resize(plan.Conns())
	if f.warm != nil {
		f.warm.Pool.Resize(plan.Cached())
	}
	if err := f.join(js); err != nil {
		return err
	}
	f.log.Info("agents file read again", "file", path, "agents", len(f.running), "joined", len(join), "left", len(leave), "changed", len(changed))
	return nil
}

// nameOf is the name u serves its agent by: its name, or its home
// folder's.
func nameOf(u unit) string {
	if u.Name != "" {
		return u.Name
	}
	return filepath.Base(u.Home)
}

// stopAll stops every agent (see leave) and waits for them all.
func (f *fleet) stopAll() {
	for name := range f.running {
		f.leave(name)
	}
	f.leaving.Wait()
}

// rest lets go of what the process keeps for turns once every agent
// sleeps: no goroutine waits for a turn, and no connection to the model
// proxy or a tool server stays open.
func (f *fleet) rest() {
	f.srv.Rest()
	f.closeIdle()
}

// asleep says whether every agent sleeps.
func (f *fleet) asleep() bool {
	for _, r := range f.running {
		r.mu.Lock()
		awake := r.held != nil || r.inflight > 0
		r.mu.Unlock()
		if awake {
			return false
		}
	}
	return true
}

// ServeHTTP answers a request to the agent's address, waking the agent
// first if it sleeps; /healthz wakes no one.
func (r *running) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/healthz" {
		r.inner.ServeHTTP(w, req)
		return
	}
	if err := r.wake(); err != nil {
		r.f.log.Error("agent not woken", "agent", r.name, "error", err)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		b, _ := json.Marshal(struct {
			Error string `json:"error"`
		}{fmt.Sprintf("agent %s could not wake: %v", r.name, err)})
		w.Write(append(b, '\n'))
		return
	}
	defer r.rest()
	if r.leaving.Load() {
		w.Header().Set("Connection", "close") // its connection ends with this answer
	}
	r.inner.ServeHTTP(w, req)
}

// wake counts a request in, making the agent again if it sleeps. An error
// leaves it asleep and the request not counted.
func (r *running) wake() error {
	woke, err := r.rise()
	if woke {
		// After it is awake, so the collector is never left quiet: quiet
		// starts only while every agent sleeps.
		r.f.quiet.stop()
	}
	return err
}

// rise is wake's part under r.mu: whether it made the agent again.
func (r *running) rise() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disarm()
	woke := false
	if r.held == nil && !r.stopped {
		a, held, err := r.unit.agent(&r.f.shared)
		if err != nil {
			return false, err
		}
		if err := r.f.srv.Add(a); err != nil {
			held.Close()
			return false, err
		}
		r.held, woke = held, true
		r.f.log.Info("agent awake", "agent", r.name)
	}
	r.inflight++
	return woke, nil
}

// rest counts a request out: the last one arms the sleep timer, or puts
// an agent whose entry changed to sleep at once.
func (r *running) rest() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	if r.inflight == 0 {
		r.settle()
	}
}

// asleep says whether the agent sleeps (or has left).
func (r *running) asleep() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held == nil
}

// entry is the agent's entry as served now.
func (r *running) entry() unit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unit
}

// renew serves the agent by its changed entry u (its address the same):
// asleep, it wakes as u; awake, it sleeps as soon as no request or turn of
// it runs, and wakes as u at its next request. Its connections stay
// open: the requests already asked are answered as it was.
func (r *running) renew(u unit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unit = u
	if r.held == nil {
		return
	}
	r.stale = true
	if r.inflight == 0 {
		r.disarm()
		r.settle()
	}
}

// settle puts an idle agent whose entry changed to sleep, or arms its
// sleep timer. r.mu is held, and no request of the agent is answered.
func (r *running) settle() {
	if r.stale && r.held != nil && !r.f.srv.Busy(r.name) {
		r.sleep()
		return
	}
	r.arm()
}

// arm starts the sleep timer, when the agent sleeps at all, or sooner
// when its entry changed. r.mu is held.
func (r *running) arm() {
	d := time.Duration(r.f.sleepAfter.Load())
	if r.stale && (d <= 0 || d > staleRetry) {
		d = staleRetry
	}
	if d <= 0 || r.held == nil || r.stopped {
		return
	}
	r.gen++
	r.f.dozer.set(r, time.Now().Add(d), r.gen)
}

// disarm stops the sleep timer. r.mu is held.
func (r *running) disarm() {
	r.gen++
	r.f.dozer.clear(r)
}

// doze puts the agent to sleep, if the timer gen is the one armed last
// and no request is being answered; a turn whose caller left puts it off
// for another sleepAfter.
func (r *running) doze(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || r.inflight > 0 || r.held == nil || r.stopped {
		return
	}
	if r.f.srv.Busy(r.name) {
		r.arm()
		return
	}
	r.sleep()
}

// staleRetry is how soon an agent whose entry changed, kept awake by a
// turn whose caller left, looks again whether it can sleep.
const staleRetry = time.Second

// sleep lets go of everything the agent holds but its listener. r.mu is
// held, and no request or turn of the agent runs.
func (r *running) sleep() {
	r.f.srv.Remove(r.name)
	if err := r.held.Close(); err != nil {
		r.f.log.Warn("agent asleep: letting go", "agent", r.name, "error", err)
	}
	r.held = nil
	r.stale = false
	// Its idle connections closed: nothing of it waits but the waiter's
	// watch of its listener.
	r.f.conns.closeIdle(r, false)
	r.f.log.Info("agent asleep", "agent", r.name)
	select {
	case r.f.dozed <- struct{}{}:
	default:
	}
}
