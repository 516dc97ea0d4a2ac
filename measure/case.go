package measure

import (
	"context"
	"errors"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/measure/report"
)

// caseRun is one case being measured. It is used by one goroutine, but for
// the fields its message senders fill, each of which is written by one.
type caseRun struct {
	cfg      *Config
	spec     caseSpec
	index    int // in Result.Cases; -1 for a peer
	messages int // measured per agent
	gcWait   time.Duration
	h        drive.Harness
	model    *model
	pr       *progress
	dir      string

	agents   []drive.Agent
	units    []*unitRun
	profiles []string
}

// unitRun is one unit of a case and what was sampled of it, each step's
// samples in a struct of their own.
type unitRun struct {
	unit       drive.Unit
	agents     []int       // indexes into caseRun.agents
	hasMetrics bool        // the unit is a drive.MetricsReader
	fresh      proc.Sample // once listening

	replies replies    // send
	span    span       // sampleBefore and sampleAfter
	idle    idleWindow // sampleIdle
	asleep  asleep     // sleepAll and wakeAll, for a drive.Sleeper
}

// replies are what send counted of a unit's measured messages, per agent
// of the unit.
type replies struct {
	latencies [][]float64 // seconds, of each message answered
	errors    []int       // messages not answered
	firstErr  []string
}

// span is a unit sampled around the measured messages: its metrics scraped
// twice before them (so what one scrape allocates is known) and once
// after, and its process right before the first message and right after
// the last.
type span struct {
	scrape0, scrape1, scrape2 drive.Metrics
	before, after             proc.Sample
}

// idleWindow is a unit over the quiet window after the warm-up: sampled at
// its start and its end, and the sample its idle memory is read from
// (worked: the start for a process, the end for a program started for
// the window).
type idleWindow struct {
	start, end, worked proc.Sample
}

// asleep is a Sleeper unit with every agent asleep: sampled before any
// message (fresh) and after the warm-up (worked), over a quiet window
// asleep from its start (from, once sleep_after is long again) to its
// end, and the message each agent was sent once all slept.
type asleep struct {
	fresh, worked, from, end proc.Sample
	woken, wakeErrors        int
	firstWakeErr             string
}

func (r *caseRun) run(ctx context.Context) (c report.Case, err error) {
	cs := r.spec
	r.pr.Phase("%s, a conversation of %s: writing homes", report.Plural(cs.Agents, "agent"), report.Plural(cs.Length, "event"))
	if err := r.makeHomes(); err != nil {
		return c, err
	}
	defer func() {
		if err != nil {
			r.killAll()
		}
	}()
	r.pr.Phase("starting %s", report.Plural(ceilDiv(cs.Agents, cs.PerProcess), "process"))
	if err := r.startUnits(ctx); err != nil {
		return c, err
	}
	for _, u := range r.units {
		if u.fresh, err = u.sampleIdle(true); err != nil {
			return c, err
		}
		r.observe(u, PhaseFresh)
	}
	if err := r.sleepAll(ctx, PhaseAsleepFresh); err != nil {
		return c, err
	}
	if r.cfg.Warmup > 0 {
		r.pr.Phase("warming up: %s per agent, not counted", report.Plural(r.cfg.Warmup, "message"))
		if err := r.send(ctx, "w", r.cfg.Warmup, true); err != nil {
			return c, err
		}
	}
	// A harness whose idle cost is a program started for the quiet window
	// is sampled idle after its messages, which would otherwise run beside
	// that program; a harness serving its agents is sampled idle here, at
	// a count of messages per agent that does not hang on the case.
	idleLast := r.startsIdle()
	if !idleLast {
		if err := r.sampleIdle(ctx); err != nil {
			return c, err
		}
	}
	// Asleep at the same count of messages per agent, then woken by one
	// more each; the scrapes of the metrics page (megabytes with many
	// agents) come after, so their garbage is in no idle figure.
	if err := r.sleepAll(ctx, PhaseAsleepWorked); err != nil {
		return c, err
	}
	if err := r.wakeAll(ctx); err != nil {
		return c, err
	}
	r.closeIdle()
	if err := r.sampleBefore(ctx); err != nil {
		return c, err
	}
	modelBefore := r.model.begin()
	r.pr.Phase("sending %s to each of %s", report.Plural(r.messages, "message"), report.Plural(cs.Agents, "agent"))
	if err := r.send(ctx, "m", r.messages, false); err != nil {
		return c, err
	}
	if err := r.sampleAfter(ctx); err != nil {
		return c, err
	}
	use := r.model.snapshot().minus(modelBefore)
	if idleLast {
		if err := r.sampleIdle(ctx); err != nil {
			return c, err
		}
	}
	r.pr.Phase("stopping %s", report.Plural(len(r.units), "process"))
	if err := r.stopAll(); err != nil {
		return c, err
	}
	return r.result(use), nil
}

// closeIdle closes the connections the messages came by: the caller's
// connections are not what an idle agent holds.
func (r *caseRun) closeIdle() {
	for _, u := range r.units {
		if c, ok := u.unit.(drive.IdleCloser); ok {
			c.CloseIdle()
		}
	}
}

// startsIdle says whether the case's units start a program for the quiet
// window (drive.IdleStarter).
func (r *caseRun) startsIdle() bool {
	for _, u := range r.units {
		if _, ok := u.unit.(drive.IdleStarter); ok {
			return true
		}
	}
	return false
}

// observe tells cfg.Observe of a sample of u.
func (r *caseRun) observe(u *unitRun, p Phase) {
	if r.cfg.Observe == nil || r.index < 0 {
		return
	}
	r.cfg.Observe(Observation{Case: r.index, Agents: r.spec.Agents, Layout: r.spec.Layout, PID: u.unit.PID(), Phase: p})
}

// wait waits d, or until ctx ends.
func (r *caseRun) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// startUnits starts the units, a few at a time.
func (r *caseRun) startUnits(ctx context.Context) error {
	per := r.spec.PerProcess
	for i := 0; i < len(r.agents); i += per {
		u := &unitRun{}
		for j := i; j < min(i+per, len(r.agents)); j++ {
			u.agents = append(u.agents, j)
		}
		u.replies.latencies = make([][]float64, len(u.agents))
		u.replies.errors = make([]int, len(u.agents))
		u.replies.firstErr = make([]string, len(u.agents))
		r.units = append(r.units, u)
	}
	return r.eachUnit(ctx, startAtOnce, func(ctx context.Context, i int, u *unitRun) error {
		agents := make([]drive.Agent, len(u.agents))
		for k, ai := range u.agents {
			agents[k] = r.agents[ai]
		}
		sctx, cancel := context.WithTimeout(ctx, drive.StartTimeout)
		defer cancel()
		unit, err := r.h.Start(sctx, agents)
		if err != nil {
			return err
		}
		u.unit = unit
		_, u.hasMetrics = unit.(drive.MetricsReader)
		r.pr.Step(i+1, len(r.units))
		return nil
	})
}

// eachUnit calls fn for each unit, at most n at once, and returns the first
// error.
func (r *caseRun) eachUnit(ctx context.Context, n int, fn func(ctx context.Context, i int, u *unitRun) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	var done int
	var mu sync.Mutex
	for _, u := range r.units {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			mu.Lock()
			done++
			i := done - 1
			mu.Unlock()
			if err := fn(ctx, i, u); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// stopAll stops every unit gracefully, together, and keeps their profiles.
func (r *caseRun) stopAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(r.units))
	for i, u := range r.units {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = u.unit.Stop(ctx)
		}()
	}
	wg.Wait()
	for _, u := range r.units {
		if p, ok := u.unit.(drive.Profiler); ok && p.CPUProfile() != "" {
			r.profiles = append(r.profiles, p.CPUProfile())
		}
	}
	return errors.Join(errs...)
}

// killAll kills whatever units were started.
func (r *caseRun) killAll() {
	var wg sync.WaitGroup
	for _, u := range r.units {
		if u.unit == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.unit.Kill()
		}()
	}
	wg.Wait()
}

// makeHomes makes each agent's home (its conversation written ahead), key
// file and scratch folder.
func (r *caseRun) makeHomes() error {
	var events []byte
	if r.spec.Length > 0 {
		events = AppendConversation(nil, Thread, r.spec.Length, time.Now())
	}
	agents, err := drive.NewAgents(r.dir, r.spec.Agents, r.model.URL)
	if err != nil {
		return err
	}
	if events != nil {
		for _, a := range agents {
			if err := writeConversation(a.Home, Thread, events); err != nil {
				return err
			}
		}
	}
	r.agents = agents
	return nil
}
