package measure

import (
	"errors"
	"fmt"
	"io"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/scripted"
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

// idleFree is the --idle-free Link Harness runs with here: a second after
// the last turn it collects and gives the memory back; the idle sample is
// taken gcMargin after that.
const (
	idleFree = time.Second
	gcMargin = 500 * time.Millisecond
)

// Limits on a Config, so every loop of a run is bounded.
const (
	maxAgents   = 20_000
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
