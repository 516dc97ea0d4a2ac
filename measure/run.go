package measure

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/loadgen/profile"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/measure/peer"
	"lnk.dev/linkharness/measure/report"
)

// Config says what to measure. The zero value measures the quick run: 3
// agents in a new conversation, each answering one message before its
// idle memory is read and then 67 measured (200 in all), 3 s of quiet.
type Config struct {
	// Harness is the harness measured; nil is Link Harness, its program
	// Program or, if empty, the one FindHarness finds or builds.
	Harness drive.Harness
	Program string

	Agents  []int // agent counts, each a case (default 3)
	Lengths []int // conversation lengths in events, each a case (default 0)

	// Messages is the measured messages per agent and case; 0 sends each
	// case's agents MinMessages in all, shared among them (at least one
	// each), so CPU per message is always a mean over that many.
	Messages int

	// Warmup is the messages each agent answers before its idle memory
	// is read (the memory "after work", at this fixed count whatever the
	// case), not counted in CPU per message (default 1; -1 for none).
	Warmup int

	// AgentsPerProcess is how many agents one unit serves in the layout
	// Each: 1 (the default) is one process each.
	AgentsPerProcess int

	// Layouts are how each count of agents is put in processes, each
	// layout its own cases (default Each alone). The conversation lengths
	// are swept in the first layout only.
	Layouts []report.Layout

	// Peers are other harnesses measured in the same run, against the same
	// scripted model, after Link Harness's cases: one agent each,
	// PeerMessages messages (default 5) after one warm-up, and a quiet
	// window of PeerIdle (default 10 s) after their idle program starts.
	// NotRun are peers asked for that cannot run here, and why.
	Peers        []drive.Harness
	NotRun       []NotRun
	PeerMessages int
	PeerIdle     time.Duration

	Concurrency int           // messages in flight at once, over all agents (default 1)
	Idle        time.Duration // each quiet window, awake and asleep (default 3 s)
	Timeout     time.Duration // one message's limit (default 60 s)
	MaxTime     time.Duration // the whole run's limit (default 30 min)
	// Profile has the processes write CPU profiles, so the largest
	// bottleneck is named. The profiler holds memory and takes CPU of its
	// own, so the idle figures of a profiled run are not the harness's.
	Profile bool
	Top     int // functions named from the profiles (default 5)
	Script  *scripted.Script

	Dir      string    // where the temporary folder goes (default the system's)
	Keep     bool      // keep the temporary folder
	Progress io.Writer // phases and a bar (on a terminal); nil for none

	// Observe, when set, is called with each process at each moment Run
	// samples it, right after its own sample, so a caller can count the
	// same process itself (TestAgreesWithProcfs).
	Observe func(Observation)
}

// Observation is one moment Run sampled one process of a case.
type Observation struct {
	Case   int           // the case's index in Result.Cases
	Agents int           // the case's agents; Processes the processes serving them
	Layout report.Layout // how they are served
	PID    int
	Phase  Phase
}

// Phase is a moment of a case that Run samples.
type Phase string

// The phases, in the order a case runs them.
const (
	PhaseFresh        Phase = "fresh"         // every agent listening, before any message
	PhaseAsleepFresh  Phase = "asleep-fresh"  // every agent asleep, none having answered
	PhaseWorked       Phase = "worked"        // each agent answered Warmup messages, after a collection
	PhaseSpanStart    Phase = "span-start"    // before the measured messages
	PhaseSpanEnd      Phase = "span-end"      // after them
	PhaseAsleepWorked Phase = "asleep-worked" // every agent asleep again, after the warm-up
)

// NotRun is a peer asked for that was not measured, and why: what is
// missing and how to get it, or how its run failed.
type NotRun struct {
	Harness string `json:"harness"`
	Why     string `json:"why"`
}

// MinMessages is how many messages a case sends in all unless
// Config.Messages says how many per agent.
const MinMessages = 200

// The sleeps a Sleeper unit is served with: long enough that no agent
// sleeps while measured awake, and short when the agents are put to sleep.
const (
	awakeSleepAfter = 24 * time.Hour
	soonSleepAfter  = time.Second
)

// idleFree is the --idle-free Link Harness runs with here: a second after
// the last turn it collects and gives the memory back; the idle sample is
// taken gcMargin after that.
const (
	idleFree = time.Second
	gcMargin = 500 * time.Millisecond
)

// Limits on a Config, so every loop of a run is bounded.
const (
	maxAgents   = 1000
	maxLength   = 10_000_000
	maxMessages = 100_000
	maxCases    = 32
	stopTimeout = 15 * time.Second
	startAtOnce = 4 // processes started at the same time
)

// ErrConfig comes from Run when the Config asks for something out of
// bounds; the error says what.
var ErrConfig = errors.New("measure: bad config")

func (c *Config) setDefaults() error {
	if len(c.Agents) == 0 {
		c.Agents = []int{3}
	}
	if len(c.Lengths) == 0 {
		c.Lengths = []int{0}
	}
	switch {
	case c.Warmup == 0:
		c.Warmup = 1
	case c.Warmup < 0:
		c.Warmup = 0
	}
	if c.AgentsPerProcess == 0 {
		c.AgentsPerProcess = 1
	}
	if len(c.Layouts) == 0 {
		c.Layouts = []report.Layout{report.Each}
	}
	for _, l := range c.Layouts {
		if l != report.Each && l != report.Shared {
			return fmt.Errorf("%w: layout %q, want each or shared", ErrConfig, l)
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.Idle == 0 {
		c.Idle = 3 * time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.MaxTime == 0 {
		c.MaxTime = 30 * time.Minute
	}
	if c.Top == 0 {
		c.Top = 5
	}
	if c.PeerMessages == 0 {
		c.PeerMessages = 5
	}
	if c.PeerIdle == 0 {
		c.PeerIdle = 10 * time.Second
	}
	if c.PeerMessages < 1 || c.PeerMessages > 1000 || c.PeerIdle < 0 || len(c.Peers) > 16 {
		return fmt.Errorf("%w: %d peers, %d messages each, idle %v", ErrConfig, len(c.Peers), c.PeerMessages, c.PeerIdle)
	}
	for _, n := range c.Agents {
		if n < 1 || n > maxAgents {
			return fmt.Errorf("%w: %d agents, want 1 to %d", ErrConfig, n, maxAgents)
		}
	}
	for _, n := range c.Lengths {
		if n < 0 || n > maxLength {
			return fmt.Errorf("%w: a conversation of %d events, want 0 to %d", ErrConfig, n, maxLength)
		}
	}
	if c.Messages < 0 || c.Messages > maxMessages {
		return fmt.Errorf("%w: %d messages, want 1 to %d", ErrConfig, c.Messages, maxMessages)
	}
	if c.Warmup > maxMessages || c.Concurrency < 1 || c.Concurrency > maxAgents || c.AgentsPerProcess < 1 ||
		c.Idle < 0 || c.Timeout < 0 || c.MaxTime < 0 || c.Top < 1 {
		return fmt.Errorf("%w: warmup %d, concurrency %d, agents per process %d, idle %v, timeout %v, max time %v, top %d",
			ErrConfig, c.Warmup, c.Concurrency, c.AgentsPerProcess, c.Idle, c.Timeout, c.MaxTime, c.Top)
	}
	if len(plan(c.Lengths, c.Agents, c.Layouts, c.AgentsPerProcess)) > maxCases {
		return fmt.Errorf("%w: more than %d cases", ErrConfig, maxCases)
	}
	return nil
}

// caseSpec is one case of a run: Agents agents, PerProcess to a process,
// each with a conversation of Length events.
type caseSpec struct {
	Length, Agents, PerProcess int
	Layout                     report.Layout
}

// plan returns the cases of a run: every length with the fewest agents
// (in the first layout), then, in each layout, every count of agents with
// the shortest conversation, each case once. One agent in the layout
// Shared is served from an agents file too, as the shared process's
// agents are (its agents sleep), so its line starts at the same process. Cost per message is read against the length and idle
// memory against the count, so the cross product (a hundred agents with
// 100,000 events each) is never needed.
func plan(lengths, agents []int, layouts []report.Layout, perProcess int) []caseSpec {
	minLen, minAgents := lengths[0], agents[0]
	for _, l := range lengths {
		minLen = min(minLen, l)
	}
	for _, a := range agents {
		minAgents = min(minAgents, a)
	}
	var out []caseSpec
	type key struct {
		length, agents, per int
		layout              report.Layout
	}
	seen := map[key]bool{}
	add := func(length, agents int, layout report.Layout) {
		per := min(perProcess, agents)
		if layout == report.Shared {
			per = agents
		}
		if per == 1 && layout != report.Shared {
			layout = report.Each
		}
		k := key{length, agents, per, layout}
		if !seen[k] {
			seen[k] = true
			out = append(out, caseSpec{Length: length, Agents: agents, PerProcess: per, Layout: layout})
		}
	}
	for _, l := range lengths {
		add(l, minAgents, layouts[0])
	}
	for _, lay := range layouts {
		for _, a := range agents {
			add(minLen, a, lay)
		}
	}
	return out
}

// Run measures what each agent of the harness costs, idle and per
// message, in each case of cfg. Everything it starts is stopped before it
// returns, killed if ctx ends or the run fails.
func Run(ctx context.Context, cfg Config) (*report.Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxTime)
	defer cancel()
	pr := newProgress(cfg.Progress)
	defer pr.Done()

	tmp, err := os.MkdirTemp(cfg.Dir, "lnk-measure-")
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	if cfg.Keep {
		defer pr.Phase("kept %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	h, program, err := harnessOf(ctx, &cfg, tmp, pr)
	if err != nil {
		return nil, err
	}
	hs := harnesses{each: h, shared: h}
	if l, ok := h.(*drive.Link); ok {
		sl := *l
		sl.SleepAfter = awakeSleepAfter
		hs.shared = &sl
	}
	m, err := startModel(cfg.Script)
	if err != nil {
		return nil, err
	}
	defer m.close()

	res := newResult(&cfg, h.Name(), program, started)
	profiles, err := runCases(ctx, &cfg, hs, m, pr, tmp, res)
	if err != nil {
		return nil, err
	}
	if err := runPeers(ctx, &cfg, m, pr, tmp, res); err != nil {
		return nil, err
	}
	if len(profiles) > 0 {
		pr.Phase("reading %d CPU profiles", len(profiles))
		s, err := profile.Summarize(profiles, cfg.Top)
		if err != nil {
			return nil, err
		}
		res.Profile = s
	}
	res.Marginal = report.Marginals(res.Cases, cfg.Layouts)
	res.Seconds = time.Since(started).Seconds()
	return res, nil
}

// harnessOf returns the harness to measure and its program: cfg.Harness
// when given, else Link Harness, its program found (or built into tmp).
func harnessOf(ctx context.Context, cfg *Config, tmp string, pr *progress) (drive.Harness, string, error) {
	if cfg.Harness != nil {
		return cfg.Harness, cfg.Program, nil
	}
	pr.Phase("finding %s", drive.ProgramName)
	p, built, err := drive.FindHarness(ctx, cfg.Program, tmp)
	if err != nil {
		return nil, "", err
	}
	if built {
		pr.Phase("built %s", p)
	}
	return &drive.Link{Program: p, Profile: cfg.Profile, IdleFree: idleFree}, p, nil
}

// newResult is a run's Result before any case: what was measured, where
// and how.
func newResult(cfg *Config, harness, program string, started time.Time) *report.Result {
	return &report.Result{
		Version: report.ResultVersion,
		Harness: harness,
		Program: program,
		Started: started.UTC(),
		Machine: machine(),
		Settings: report.Settings{
			Messages: cfg.Messages, Warmup: cfg.Warmup, Concurrency: cfg.Concurrency,
			IdleSeconds: cfg.Idle.Seconds(), Lengths: cfg.Lengths, Agents: cfg.Agents,
			AgentsPerProcess: cfg.AgentsPerProcess, Layouts: cfg.Layouts, Thread: Thread, Profiled: cfg.Profile,
		},
	}
}

// harnesses are the harness a case runs on, by layout: Link Harness in
// the layout Shared is served from an agents file whose agents sleep.
type harnesses struct{ each, shared drive.Harness }

// runCases measures each case of cfg's plan in turn, each in a folder of
// its own under tmp, adds them to res, and returns the CPU profiles the
// processes wrote.
func runCases(ctx context.Context, cfg *Config, hs harnesses, m *model, pr *progress, tmp string, res *report.Result) ([]string, error) {
	var profiles []string
	for i, cs := range plan(cfg.Lengths, cfg.Agents, cfg.Layouts, cfg.AgentsPerProcess) {
		h := hs.each
		if cs.Layout == report.Shared {
			h = hs.shared
		}
		r := &caseRun{cfg: cfg, spec: cs, h: h, model: m, pr: pr, index: i, messages: cfg.Messages,
			dir: filepath.Join(tmp, fmt.Sprintf("case%d-len%d-agents%d-%s", i+1, cs.Length, cs.Agents, cs.Layout))}
		if r.messages == 0 {
			r.messages = max(1, ceilDiv(MinMessages, cs.Agents))
		}
		if l, ok := h.(*drive.Link); ok && l.IdleFree > 0 {
			r.gcWait = l.IdleFree + gcMargin
		}
		c, err := r.run(ctx)
		if err != nil {
			return nil, err
		}
		res.Cases = append(res.Cases, c)
		profiles = append(profiles, r.profiles...)
		if !cfg.Keep {
			// The homes can be large (100,000 events each); the profiles
			// stay for the summary.
			os.RemoveAll(filepath.Join(r.dir, "agents"))
		}
	}
	return profiles, nil
}

// runPeers measures each of cfg.Peers as one agent with a short
// conversation, against the same model, and adds them to res.
func runPeers(ctx context.Context, cfg *Config, m *model, pr *progress, tmp string, res *report.Result) error {
	for i, ph := range cfg.Peers {
		pcfg := *cfg
		pcfg.Messages, pcfg.Warmup, pcfg.Idle, pcfg.Concurrency = cfg.PeerMessages, 1, cfg.PeerIdle, 1
		pcfg.Observe = nil
		if _, ok := ph.(*peer.Floor); ok {
			// The floor's CPU per message stands beside Link Harness's, so
			// it is a mean over as many messages.
			pcfg.Messages = cmp.Or(cfg.Messages, MinMessages)
			// Its idle CPU is the Go runtime's own, beside Link
			// Harness's over the same quiet window.
			pcfg.Idle = cmp.Or(cfg.Idle, pcfg.Idle)
		}
		pr.Phase("peer %s", ph.Name())
		r := &caseRun{cfg: &pcfg, spec: caseSpec{Length: 0, Agents: 1, PerProcess: 1, Layout: report.Each}, h: ph, model: m, pr: pr,
			index: -1, messages: pcfg.Messages, dir: filepath.Join(tmp, fmt.Sprintf("peer%d-%s", i+1, ph.Name()))}
		c, err := r.run(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("measure: peer %s: %w", ph.Name(), err)
			}
			// A peer that fails is told as not run, with why; the rest
			// of the run stands.
			res.Peers = append(res.Peers, report.PeerResult{Harness: ph.Name(), NotRun: err.Error()})
			continue
		}
		pres := report.PeerResult{Harness: ph.Name(), Messages: pcfg.Messages, IdleSeconds: pcfg.Idle.Seconds(), Case: c}
		if cmd, ok := ph.(*peer.Command); ok {
			pres.Version = cmd.Version
			pres.Program = cmd.First[0]
		}
		res.Peers = append(res.Peers, pres)
	}
	for _, n := range cfg.NotRun {
		res.Peers = append(res.Peers, report.PeerResult{Harness: n.Harness, NotRun: n.Why})
	}
	return nil
}

func machine() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

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

// unitRun is one unit of a case and what was sampled of it.
type unitRun struct {
	unit   drive.Unit
	agents []int // indexes into caseRun.agents

	fresh        proc.Sample   // once listening
	b, c         proc.Sample   // before the messages and after them
	ma, mb, mc   drive.Metrics // two scrapes before b, one after c
	idle0, idle1 proc.Sample   // the quiet window
	worked       proc.Sample   // idle memory after the warm-up (idle0 or idle1)
	latencies    [][]float64   // per agent of the unit, seconds
	errors       []int         // per agent of the unit
	firstErr     []string      // per agent of the unit
	hasMetrics   bool

	// A Sleeper's: every agent asleep before any message and after its
	// messages, a quiet window asleep, and the messages sent once all slept.
	asleepFresh, asleep0, asleep1 proc.Sample
	asleepFrom                    proc.Sample // the quiet window's start asleep, once sleep_after is long again
	woken, wakeErrors             int
	firstWakeErr                  string
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

// sleepAll puts every agent of every Sleeper unit to sleep and samples
// the process once it says all sleep and their memory went back to the
// system (after a collection): its sleep_after made short and each agent
// touched, so each timer is armed with it; then sleep_after is a day
// again, so no agent sleeps between the messages to come. After the
// warm-up (PhaseAsleepWorked) a quiet window asleep follows, for idle
// CPU. A case of other units does nothing.
func (r *caseRun) sleepAll(ctx context.Context, p Phase) error {
	var sleepers []*unitRun
	for _, u := range r.units {
		if _, ok := u.unit.(drive.Sleeper); ok {
			sleepers = append(sleepers, u)
		}
	}
	if len(sleepers) == 0 {
		return nil
	}
	r.pr.Phase("every agent asleep (%s)", p)
	err := r.eachUnit(ctx, startAtOnce, func(ctx context.Context, _ int, u *unitRun) error {
		sl, ok := u.unit.(drive.Sleeper)
		if !ok {
			return nil
		}
		n := sl.AllAsleep()
		if err := sl.SetSleepAfter(ctx, soonSleepAfter); err != nil {
			return err
		}
		for _, ai := range u.agents {
			if err := sl.Touch(ctx, r.agents[ai].Name); err != nil {
				return err
			}
		}
		if err := sl.WaitAllAsleep(ctx, n+1); err != nil {
			return err
		}
		s, err := u.sampleIdle(true)
		if err != nil {
			return err
		}
		if p == PhaseAsleepFresh {
			u.asleepFresh = s
		} else {
			u.asleep0 = s
		}
		// Awake for the messages once they come, and kept so: an agent
		// asleep between them would be measured waking.
		if err := sl.SetSleepAfter(ctx, awakeSleepAfter); err != nil {
			return err
		}
		// The quiet window starts once the harness has read its agents
		// file again: that reading is the measurer's, not idle CPU.
		u.asleepFrom, err = u.sampleIdle(true)
		return err
	})
	if err != nil {
		return err
	}
	for _, u := range sleepers {
		r.observe(u, p)
	}
	if p != PhaseAsleepWorked {
		return nil
	}
	if err := r.wait(ctx, r.cfg.Idle); err != nil {
		return err
	}
	for _, u := range sleepers {
		if u.asleep1, err = u.sampleIdle(true); err != nil {
			return err
		}
	}
	return nil
}

// wakeAll sends every agent of every Sleeper unit, all asleep, one more
// message, and counts those answered.
func (r *caseRun) wakeAll(ctx context.Context) error {
	var sleepers bool
	for _, u := range r.units {
		_, ok := u.unit.(drive.Sleeper)
		sleepers = sleepers || ok
	}
	if !sleepers {
		return nil
	}
	r.pr.Phase("waking every agent with a message")
	var mu sync.Mutex
	return r.eachUnit(ctx, len(r.units), func(ctx context.Context, _ int, u *unitRun) error {
		if _, ok := u.unit.(drive.Sleeper); !ok {
			return nil
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range min(r.cfg.Concurrency, len(u.agents)) {
			wg.Go(func() {
				for ai := range jobs {
					mctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
					_, err := u.unit.Send(mctx, r.agents[ai].Name, Thread, drive.Message{
						ID: "z1", Text: "Hello again, after a sleep. Please answer briefly."})
					cancel()
					mu.Lock()
					if err != nil {
						u.wakeErrors++
						if u.firstWakeErr == "" {
							u.firstWakeErr = err.Error()
						}
					} else {
						u.woken++
					}
					mu.Unlock()
				}
			})
		}
		for _, ai := range u.agents {
			select {
			case jobs <- ai:
			case <-ctx.Done():
			}
		}
		close(jobs)
		wg.Wait()
		return ctx.Err()
	})
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

// makeHomes makes each agent's home (its conversation written ahead), key
// file and scratch folder.
func (r *caseRun) makeHomes() error {
	var events []byte
	if r.spec.Length > 0 {
		events = AppendConversation(nil, Thread, r.spec.Length, time.Now())
	}
	for _, sub := range []string{"agents", "keys", "run"} {
		if err := os.MkdirAll(filepath.Join(r.dir, sub), 0o700); err != nil {
			return fmt.Errorf("measure: %w", err)
		}
	}
	for i := range r.spec.Agents {
		name := fmt.Sprintf("agent-%d", i+1)
		a := drive.Agent{
			Name:    name,
			Home:    filepath.Join(r.dir, "agents", name),
			KeyFile: filepath.Join(r.dir, "keys", name+".key"),
			Scratch: filepath.Join(r.dir, "run", name),
			Model:   r.model.URL,
			Key:     newKey(),
		}
		for _, d := range []string{a.Home, a.Scratch} {
			if err := os.Mkdir(d, 0o700); err != nil {
				return fmt.Errorf("measure: %w", err)
			}
		}
		if err := os.WriteFile(a.KeyFile, []byte(a.Key+"\n"), 0o600); err != nil {
			return fmt.Errorf("measure: %w", err)
		}
		if events != nil {
			if err := writeConversation(a.Home, Thread, events); err != nil {
				return err
			}
		}
		r.agents = append(r.agents, a)
	}
	return nil
}

func newKey() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// startUnits starts the units, a few at a time.
func (r *caseRun) startUnits(ctx context.Context) error {
	per := r.spec.PerProcess
	for i := 0; i < len(r.agents); i += per {
		u := &unitRun{}
		for j := i; j < min(i+per, len(r.agents)); j++ {
			u.agents = append(u.agents, j)
		}
		u.latencies = make([][]float64, len(u.agents))
		u.errors = make([]int, len(u.agents))
		u.firstErr = make([]string, len(u.agents))
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

// send sends count messages to every agent, round after round, at most
// Concurrency at once. With must, the first error ends the run (a harness
// that cannot answer a warm-up message cannot be measured); otherwise
// errors are counted.
func (r *caseRun) send(ctx context.Context, prefix string, count int, must bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &sending{r: r, prefix: prefix, must: must, total: count * len(r.agents), cancel: cancel}
	s.answered.L = &s.mu
	jobs := make(chan sendJob)
	var wg sync.WaitGroup
	for range min(r.cfg.Concurrency, s.total) {
		wg.Go(func() {
			for j := range jobs {
				s.one(ctx, j)
			}
		})
	}
	s.feed(ctx, jobs, count)
	wg.Wait()
	if must {
		// The warm-up's errors are not the measurement's.
		for _, u := range r.units {
			clear(u.errors)
			clear(u.firstErr)
		}
	}
	if s.failure != nil {
		return s.failure
	}
	return ctx.Err()
}

// sending is one call of send under way, shared by its senders.
type sending struct {
	r      *caseRun
	prefix string // of the messages' ids
	must   bool   // the first error ends the sending
	total  int    // messages to send
	cancel context.CancelFunc

	mu       sync.Mutex
	answered sync.Cond // broadcast each time done grows; its L is &mu
	done     int       // messages answered or failed
	failure  error     // with must, the first error
}

// sendJob is one message to send: the nth to an agent, the kth of unit u.
type sendJob struct {
	u    *unitRun
	k    int // the agent's index in its unit
	name string
	n    int // the message's number, from 1
}

// feed hands out every agent's messages, round after round, until all are
// sent or ctx ends, then closes jobs: an agent's next message goes once
// every agent's last is answered, so each continues its conversation.
func (s *sending) feed(ctx context.Context, jobs chan<- sendJob, count int) {
	defer close(jobs)
	r := s.r
	for n := 1; n <= count; n++ {
		for _, u := range r.units {
			for k, ai := range u.agents {
				select {
				case jobs <- sendJob{u, k, r.agents[ai].Name, n}:
				case <-ctx.Done():
					return
				}
			}
		}
		s.wait(n * len(r.agents))
	}
}

// wait returns once want messages are answered or failed. Every message
// handed out ends, answered, failed, or at its timeout.
func (s *sending) wait(want int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.done < want {
		s.answered.Wait()
	}
}

// one sends one message and counts what came of it: its latency, or its
// error.
func (s *sending) one(ctx context.Context, j sendJob) {
	mctx, cancel := context.WithTimeout(ctx, s.r.cfg.Timeout)
	rep, err := j.u.unit.Send(mctx, j.name, Thread, drive.Message{
		ID:   fmt.Sprintf("%s%d", s.prefix, j.n),
		Text: fmt.Sprintf("Hello, this is message %d of the measurement. Please answer briefly.", j.n),
	})
	cancel()
	s.mu.Lock()
	s.done++
	if err != nil {
		if s.must && s.failure == nil {
			s.failure = err
			s.cancel()
		}
		j.u.errors[j.k]++
		if j.u.firstErr[j.k] == "" {
			j.u.firstErr[j.k] = err.Error()
		}
	} else if !s.must {
		j.u.latencies[j.k] = append(j.u.latencies[j.k], rep.Latency.Seconds())
	}
	done := s.done
	s.answered.Broadcast()
	s.mu.Unlock()
	s.r.pr.Step(done, s.total)
}

// sampleBefore scrapes each unit's metrics twice, so what one scrape
// allocates is known and taken off the messages' count, then samples its
// process: the span measured holds the messages and nothing else (a
// scrape of a process of 1,000 agents costs a fifth of a second).
func (r *caseRun) sampleBefore(ctx context.Context) error {
	return r.eachUnit(ctx, len(r.units), func(ctx context.Context, _ int, u *unitRun) (err error) {
		if u.ma, err = scrape(ctx, u); err != nil {
			return err
		}
		if u.mb, err = scrape(ctx, u); err != nil {
			return err
		}
		if u.b, err = u.sampleWork(); err != nil {
			return err
		}
		r.observe(u, PhaseSpanStart)
		return nil
	})
}

func (r *caseRun) sampleAfter(ctx context.Context) error {
	return r.eachUnit(ctx, len(r.units), func(ctx context.Context, _ int, u *unitRun) (err error) {
		if u.c, err = u.sampleWork(); err != nil {
			return err
		}
		r.observe(u, PhaseSpanEnd)
		u.mc, err = scrape(ctx, u)
		return err
	})
}

func scrape(ctx context.Context, u *unitRun) (drive.Metrics, error) {
	mr, ok := u.unit.(drive.MetricsReader)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return mr.Metrics(ctx)
}

// sampleIdle samples every unit at the start and end of one quiet window,
// begun gcWait after the last message, once the process collected its
// garbage and gave the memory back (`serve --idle-free`; no collection can
// be asked of it from outside). A unit whose idle cost is a program started
// for the window (IdleStarter) has it started first, and the window waited
// once more before sampling, for the program to settle.
func (r *caseRun) sampleIdle(ctx context.Context) error {
	var err error
	started := false
	for _, u := range r.units {
		if is, ok := u.unit.(drive.IdleStarter); ok {
			if err := is.StartIdle(ctx); err != nil {
				return err
			}
			started = true
		}
	}
	r.closeIdle()
	settle := r.gcWait
	if started {
		settle = r.cfg.Idle
	}
	r.pr.Phase("quiet for %v", settle+r.cfg.Idle)
	if err := r.wait(ctx, settle); err != nil {
		return err
	}
	for _, u := range r.units {
		if u.idle0, err = u.sampleIdle(true); err != nil {
			return err
		}
		r.observe(u, PhaseWorked)
	}
	if err := r.wait(ctx, r.cfg.Idle); err != nil {
		return err
	}
	for _, u := range r.units {
		if u.idle1, err = u.sampleIdle(true); err != nil {
			return err
		}
		// A process's memory right after its collection; a program
		// started for the window, at the window's end.
		u.worked = u.idle0
		if started {
			u.worked = u.idle1
		}
	}
	return nil
}

// sampleWork samples what a unit's messages cost so far: its process, or
// what a UsageCounter counted.
func (u *unitRun) sampleWork() (proc.Sample, error) {
	if uc, ok := u.unit.(drive.UsageCounter); ok {
		return uc.Usage(), nil
	}
	return proc.Read(u.unit.PID(), false)
}

// sampleIdle samples a unit's process for its memory and idle CPU: for a
// unit running a command per message, the whole tree of the program it
// runs idle; nothing (a zero sample) while no process lives.
func (u *unitRun) sampleIdle(memory bool) (proc.Sample, error) {
	pid := u.unit.PID()
	if pid == 0 {
		return proc.Sample{Time: time.Now()}, nil
	}
	if _, ok := u.unit.(drive.UsageCounter); ok {
		return proc.ReadTree(pid, memory)
	}
	return proc.Read(pid, memory)
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

// result computes the case's figures from what was sampled.
func (r *caseRun) result(use modelUse) report.Case {
	c := report.Case{Length: r.spec.Length, Agents: r.spec.Agents, Processes: len(r.units), Layout: r.spec.Layout,
		MessagesPerAgent: r.messages, Warmup: r.cfg.Warmup}
	answered := 0
	for _, u := range r.units {
		for _, l := range u.latencies {
			answered += len(l)
		}
	}
	modelPerMsg := use.Seconds / float64(max(answered, 1))
	for _, u := range r.units {
		for k, ai := range u.agents {
			cost := u.cost(k, len(u.agents), r.agents[ai].Name, modelPerMsg)
			c.PerAgent = append(c.PerAgent, cost)
			c.Messages += cost.PerMessage.MessagesCounted
			c.Errors += cost.PerMessage.Errors
			if c.FirstError == "" {
				c.FirstError = u.firstErr[k]
			}
		}
	}
	sort.SliceStable(c.PerAgent, func(i, j int) bool { return agentLess(c.PerAgent[i].Name, c.PerAgent[j].Name) })
	c.Median = report.MedianOf(c.PerAgent)
	c.Total = report.TotalOf(c.PerAgent)
	if c.Messages > 0 {
		c.Model = report.ModelCost{
			Requests: float64(use.Requests) / float64(c.Messages),
			Seconds:  use.Seconds / float64(c.Messages),
			MaxBytes: float64(use.MaxBytes),
		}
	}
	if use.Requests > 0 {
		c.Model.RequestBytes = float64(use.RequestBytes) / float64(use.Requests)
	}
	for _, u := range r.units {
		if _, ok := u.unit.(drive.Sleeper); !ok {
			continue
		}
		if c.Asleep == nil {
			c.Asleep = &report.Asleep{}
		}
		a := c.Asleep
		add := func(m *report.Memory, s proc.Sample) {
			m.RSS += float64(s.RSS)
			m.PSS += float64(s.PSS)
			m.Anon += float64(s.Anon)
		}
		add(&a.Fresh, u.asleepFresh)
		add(&a.Worked, u.asleep0)
		if s := u.asleep1.Time.Sub(u.asleepFrom.Time).Seconds(); s > 0 {
			a.CPU += proc.CPUSeconds(u.asleepFrom, u.asleep1) / s
			a.WindowSeconds = s
		}
		a.Woken += u.woken
		a.WakeErrors += u.wakeErrors
		if a.FirstWakeErr == "" {
			a.FirstWakeErr = u.firstWakeErr
		}
	}
	return c
}

// agentLess orders agent-2 before agent-10.
func agentLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// cost is the k-th of the unit's n agents' cost: the unit's process cost
// shared among its agents, and the agent's own latencies and counters.
func (u *unitRun) cost(k, n int, name string, modelPerMsg float64) report.AgentCost {
	shared := float64(n)
	lat := u.latencies[k]
	msgs := len(lat)
	ac := report.AgentCost{Name: name, PID: u.unit.PID()}
	ac.Start = memory(u.fresh, shared)
	ac.Idle.Memory = memory(u.worked, shared)
	if s := u.idle1.Time.Sub(u.idle0.Time).Seconds(); s > 0 {
		ac.Idle.CPU = proc.CPUSeconds(u.idle0, u.idle1) / s / shared
	}
	pm := &ac.PerMessage
	pm.MessagesCounted = msgs
	pm.Errors = u.errors[k]
	if msgs == 0 {
		return ac
	}
	// The unit's messages are all its agents', and nothing else ran
	// between b and c.
	unitMsgs := 0
	for _, l := range u.latencies {
		unitMsgs += len(l)
	}
	per := func(x float64) float64 { return max(x, 0) / float64(unitMsgs) }
	// The process's own CPU-time clock over every measured message: a
	// mean, as an independent count of the same span reads it.
	pm.CPU = per(proc.CPUSeconds(u.b, u.c))
	pm.ReadChars = per(d(u.b.RChar, u.c.RChar))
	pm.WrittenChars = per(d(u.b.WChar, u.c.WChar))
	pm.DiskRead = per(d(u.b.ReadBytes, u.c.ReadBytes))
	pm.DiskWritten = per(d(u.b.WriteBytes, u.c.WriteBytes))
	if uc, ok := u.unit.(drive.UsageCounter); ok {
		pm.PeakRSS = float64(uc.PeakRSS())
	}

	// The model's share of a message: as the harness counted its calls,
	// else the model server's own time.
	model := modelPerMsg
	if u.hasMetrics {
		own := countersOf(u.mc, name).minus(countersOf(u.mb, name))
		scrapeCost := countersOf(u.mb, name).minus(countersOf(u.ma, name))
		pm.StoreRead = max(own.StoreRead, 0) / float64(msgs)
		pm.StoreWritten = max(own.StoreWritten, 0) / float64(msgs)
		if own.TurnCount > 0 {
			pm.Turn = own.TurnSeconds / own.TurnCount
		}
		pm.Model = own.ModelSeconds / float64(msgs)
		pm.TurnsCounted = own.Turns
		pm.TurnErrorsCounted = own.TurnErrors
		pm.Allocs = per(own.AllocObjects - scrapeCost.AllocObjects)
		pm.AllocBytes = per(own.AllocBytes - scrapeCost.AllocBytes)
		ac.Idle.Goroutines = countersOf(u.ma, name).Goroutines
		model = pm.Model
	}
	pm.Latency = report.SpreadOf(lat)
	added := make([]float64, len(lat))
	for i, l := range lat {
		added[i] = max(l-model, 0)
	}
	pm.Added = report.SpreadOf(added)
	return ac
}

func memory(s proc.Sample, shared float64) report.Memory {
	return report.Memory{RSS: float64(s.RSS) / shared, PSS: float64(s.PSS) / shared, Anon: float64(s.Anon) / shared}
}

// d is b-a of a counter, as a float.
func d(a, b uint64) float64 {
	if b < a { // a counter that went back
		return 0
	}
	return float64(b - a)
}
