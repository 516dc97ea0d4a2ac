package fleet

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/internal/httpconn"
	"lnk.dev/linkharness/harness/server"
)

// fleet is the agents a process serves, each on its own listener, joining
// and leaving while it runs. Its methods are called from Run's one loop,
// never at once; stopping an agent runs on beside it.
type fleet struct {
	Shared
	ending context.Context // done once a graceful stop's grace is over: every turn ends
	plan   budget.Plan     // the descriptors the process is sized for
	pool   *budget.Pool    // callers' connections, and what caches keep open
	srv    *server.Server
	out    io.Writer         // where "listening on" lines go
	named  bool              // whether a listening line names its agent
	grace  time.Duration     // how long a stopping agent's connections are waited for, with stopMargin
	errc   chan error        // a listener's end other than a stop
	dozed  chan struct{}     // a send (when there is room) each time an agent falls asleep
	waiter *waiter           // watches every agent's listener; nil: each has an accept loop
	watch  *httpconn.Watcher // sees callers leave; nil (no epoll set): only once told
	conns  *conns            // the one server of every agent's connections
	dozer  dozer             // puts agents to sleep when their time comes
	quiet  quietGC           // the collector stopped while every agent sleeps

	// sleepAfter is how long an agent answers nothing before it sleeps
	// (in nanoseconds); 0 never. A reload sets it.
	sleepAfter atomic.Int64

	running map[string]*running // by agent name
	leaving sync.WaitGroup      // agents stopping
}

// joining is an agent made and listening, not served yet.
type joining struct {
	unit  Unit
	name  string
	held  io.Closer
	agent server.Agent
	ln    net.Listener
}

// prepare makes the agents of units and their listeners, serving none of
// them yet; on an error, what it made is let go of and nothing has
// changed.
func (f *fleet) prepare(units []Unit) ([]*joining, error) {
	var made []*joining
	undo := func() {
		for _, j := range made {
			j.ln.Close()
			j.held.Close()
		}
	}
	for _, u := range units {
		a, held, err := u.agent(&f.Shared, f.ending)
		if err != nil {
			undo()
			return nil, where(u, err)
		}
		name := a.Runner.Agent.Name
		ln, err := listen(u.Listen)
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
func where(u Unit, err error) error {
	if u.line == 0 {
		return err
	}
	return fmt.Errorf("agents file line %d: %w", u.line, err)
}

// join serves the agents prepare made, each printing where it listens.
func (f *fleet) join(js []*joining) error {
	if len(js) > 0 {
		f.quiet.stop() // they are awake
	}
	if f.conns == nil {
		f.conns = newConns(f.pool, f.watch, f.Log)
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
			f.Log.Warn("agent leaving: connections closed past the grace", "agent", name, "connections", f.conns.count(r))
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
		f.Log.Info("agent left", "agent", name)
	}()
}

// reload serves the agents file at path as it reads now: an agent no
// longer in it leaves, a new one joins, one whose entry changed takes it
// (see renew), and the others are untouched. A file that cannot be served
// (unreadable, malformed, an agent served moved to another address, a new
// or changed agent's home, key, settings or address not usable) changes
// nothing, and the error says why and where.
func (f *fleet) reload(path string) error {
	file, err := ReadAgents(path)
	if err != nil {
		return err
	}
	units := file.Units
	plan, err := budget.Plan{Limit: f.plan.Limit, Agents: len(units), MaxTurns: file.MaxTurns}.Sized()
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrAgents, path, err)
	}
	want := map[string]bool{}
	var join []Unit
	changed := map[*running]Unit{}
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
			_, held, err := u.agent(&f.Shared, f.ending)
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
	f.sleepAfter.Store(int64(file.SleepAfter)) // each agent's next timer
	f.plan = plan
	f.Turns.SetMax(plan.MaxTurns)
	f.pool.Resize(plan.Conns())
	if f.Warm != nil {
		f.Warm.Pool.Resize(plan.Cached())
	}
	if err := f.join(js); err != nil {
		return err
	}
	f.Log.Info("agents file read again", "file", path, "agents", len(f.running), "joined", len(join), "left", len(leave), "changed", len(changed))
	return nil
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
	f.CloseIdle()
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
