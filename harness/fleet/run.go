package fleet

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/internal/epoll"
	"lnk.dev/linkharness/harness/internal/httpconn"
	"lnk.dev/linkharness/harness/server"
)

// Options are how a process serves its agents: what they share and the
// server that answers them, built in main, and when they sleep and stop.
type Options struct {
	Shared
	Server *server.Server // answers every agent's requests
	Plan   budget.Plan    // the descriptors the process is sized for
	Out    io.Writer      // where the "listening on" and "blank on" lines go
	Units  []Unit         // the agents served from the start

	// AgentsFile, when set, is the agents file Units were read from: it is
	// read again at each Reload, and each agent joining later prints its
	// name on its listening line.
	AgentsFile string
	// Control, when not nil, is a blank unit's control socket (see
	// ListenControl): one line on it binds the unit to an agent, once.
	Control net.Listener

	SleepAfter     time.Duration // how long an agent answers nothing before it sleeps; 0 never
	ExitWhenAsleep bool          // stop once every agent sleeps
	Grace          time.Duration // how long running turns may go on once stopping

	// IdleFree is how long every agent stays asleep before FreeMemory
	// gives back what they let go of; 0 never.
	IdleFree   time.Duration
	FreeMemory func()

	// Stop stops the process gracefully; a second value on it ends the
	// running turns at once. Main has the signals sent here before the
	// first listening line is printed.
	Stop <-chan os.Signal
	// Reload reads AgentsFile again: agents join and leave.
	Reload <-chan os.Signal
}

// Run serves o.Units, each on its own listener, and the agent a control
// line binds, until o.Stop, a listener's end or, with ExitWhenAsleep,
// every agent asleep; then it stops gracefully (see stop) and returns the
// listener's error, or nil. An agent that cannot be made or listen is an
// error before any is served.
func Run(o Options) error {
	// Done once a graceful stop's grace is over: every running turn ends.
	ending, endTurns := context.WithCancel(context.Background())
	defer endTurns()
	f := newFleet(o, ending)
	// Each agent on its own port, as itself; a request naming another agent
	// needs that agent's key.
	js, err := f.prepare(o.Units)
	if err != nil {
		return err
	}
	// A blank unit holds nothing of anyone's until a control line binds
	// it; then it refuses every other.
	var binds chan binding
	if o.Control != nil {
		binds = make(chan binding)
		go control(o.Control, binds, f.Log)
		fmt.Fprintf(o.Out, "blank on %s\n", o.Control.Addr())
	}
	if err := f.join(js); err != nil {
		f.stopAll()
		return err
	}
	serveErr := f.loop(o, binds)
	f.stop(o, endTurns)
	return serveErr
}

// newFleet is the fleet Run serves, with no agent yet; ending, once done,
// ends every turn.
func newFleet(o Options, ending context.Context) *fleet {
	f := &fleet{
		Shared: o.Shared, ending: ending,
		plan: o.Plan, pool: budget.NewPool(o.Plan.Conns()), srv: o.Server, out: o.Out,
		named: o.AgentsFile != "", grace: o.Grace,
		errc: make(chan error, 1), dozed: make(chan struct{}, 1), running: map[string]*running{},
	}
	f.sleepAfter.Store(int64(o.SleepAfter))
	// One goroutine of the process, waiting on one epoll set, watches
	// every agent's listener, so an agent, awake or asleep, has no accept
	// loop of its own, and sees callers leave while their messages wait on
	// their turns, so no connection has a goroutine reading one byte to.
	set, err := epoll.New()
	if err != nil {
		f.Log.Warn("each agent has an accept loop of its own", "error", err)
		return f
	}
	f.waiter = newWaiter(set)
	f.watch = httpconn.NewWatcher(set)
	return f
}

// loop runs the fleet until o.Stop, a listener's end (its error returned)
// or, with o.ExitWhenAsleep, every agent asleep: it binds a blank unit,
// reads the agents file again, and lets go of what the process keeps once
// every agent sleeps.
func (f *fleet) loop(o Options, binds <-chan binding) error {
	var freeing *time.Timer // gives back memory once every agent stayed asleep
	freeAsleep := make(chan struct{}, 1)
	defer func() {
		if freeing != nil {
			freeing.Stop()
		}
	}()
	bound := false
	for {
		select {
		case err := <-f.errc:
			return err
		case <-o.Stop:
			return nil
		case <-f.dozed:
			if !f.asleep() {
				continue
			}
			f.rest()
			if o.ExitWhenAsleep {
				f.Log.Info("every agent asleep: stopping")
				return nil
			}
			// What the agents let go of goes back to the system once
			// they stay asleep for IdleFree (their connections' last
			// goroutines ended by then), the garbage of their making at
			// the start too, which no turn's end would free.
			if o.IdleFree > 0 {
				if freeing == nil {
					freeing = time.AfterFunc(o.IdleFree, func() {
						select {
						case freeAsleep <- struct{}{}:
						default:
						}
					})
				} else {
					freeing.Reset(o.IdleFree)
				}
			}
		case <-freeAsleep:
			if f.asleep() {
				if o.FreeMemory != nil {
					o.FreeMemory()
				}
				f.quiet.start(f.asleep)
				f.Log.Info("every agent asleep: memory given back")
			}
		case b := <-binds:
			bound = f.bind(b, bound)
		case <-o.Reload:
			if err := f.reload(o.AgentsFile); err != nil {
				f.Log.Error("agents file not read again: nothing changed", "file", o.AgentsFile, "error", err)
			}
		}
	}
}

// stopMargin is how long past the grace a graceful stop waits for a
// connection that is no turn's before it closes it.
const stopMargin = 5 * time.Second

// stop stops the fleet gracefully: /readyz answers 503 at once and a new
// message is refused 503 with Retry-After, the listeners open to say so,
// while every message already asked is answered and turns whose caller
// left run to their end, for the grace; then (or at a second o.Stop) the
// turns still running are ended by endTurns, what they wrote kept for the
// next turn, and their callers told 503. Once no turn runs, no new
// connection is taken. A connection that is no turn's (a slow
// body) is closed a little after the grace (stopMargin), so the process
// exits within it and that margin.
func (f *fleet) stop(o Options, endTurns context.CancelFunc) {
	stopping := time.Now()
	running := f.srv.Running()
	f.Log.Info("stopping", "turns", running, "grace_seconds", o.Grace.Seconds())
	over := time.AfterFunc(o.Grace, func() {
		f.Log.Warn("grace over: ending the running turns", "turns", f.srv.Running())
		endTurns()
	})
	defer over.Stop()
	go func() {
		select {
		case <-o.Stop:
			f.Log.Warn("a second signal: ending the running turns", "turns", f.srv.Running())
			endTurns()
		case <-f.ending.Done():
		}
	}()
	// The listeners stay open through the grace, so /readyz says the
	// process is stopping and a new message is refused 503 with
	// Retry-After; once the turns end (or the grace does), they close.
	f.srv.Stop()
	f.srv.Wait()
	f.stopAll()
	f.srv.Wait()
	f.Log.Info("stopped", "turns", running, "seconds", time.Since(stopping).Seconds())
}
