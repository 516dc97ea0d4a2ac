package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/loadgen/scripted"
)

// FloodConfig is a flood: many messages at once to one agent of a process
// whose turns in flight are bounded. Zero fields take the defaults given.
type FloodConfig struct {
	Program  string // the lnk-link-harness program (default: as drive.FindHarness finds it)
	Messages int    // sent at once, each to a conversation of its own (default 3,000, at most 20,000)
	MaxTurns int    // the process's bound on turns in flight (default 500)
	// TextBytes makes each message's text that long, of words, so what a
	// turn holds of its conversation shows (default a few words, at most
	// floodTextBound).
	TextBytes int
	Script    *scripted.Script // the model (default: FloodScript, 2 to 3 s an answer)
	Dir       string           // where the temporary folder goes (default the system's)
	Progress  io.Writer        // a line at each step; nil for none
}

// FloodScript is the model of a flood unless a script says: every answer
// takes 2 to 3 seconds, so the bound on turns is met and held.
var FloodScript = []byte(`
[[rule]]
match = ""
latency_ms = 2000
latency_ms_max = 3000
`)

// FloodResult is what a flood found. Every message must be answered 200
// or refused 503 with Retry-After, and every refused one answered once
// sent again: Other counts what was neither.
type FloodResult struct {
	Messages int `json:"messages"`
	MaxTurns int `json:"max_turns"`
	Answered int `json:"answered"` // 200 when first sent
	Refused  int `json:"refused"`  // 503 with Retry-After when first sent
	Retries  int `json:"retries"`  // sends again after a Retry-After, all told
	Later    int `json:"later"`    // refused ones answered 200 once sent again
	Other    int `json:"other"`    // any other answer or error, at any send
	// FirstOther is the first of those, as the client saw it.
	FirstOther string  `json:"first_other,omitempty"`
	Seconds    float64 `json:"seconds"` // from the first send to the last answer

	// Resident memory of the harness: before the flood (after one message
	// answered), the most seen while it ran, and the growth between.
	Before int64 `json:"rss_before"`
	Peak   int64 `json:"rss_peak"`
	Growth int64 `json:"rss_growth"`

	// What the harness's /metrics told of its memory before the flood and
	// the most it told while it ran, read every quarter second: where
	// the growth is (see Runtime).
	RuntimeBefore Runtime `json:"runtime_before"`
	RuntimePeak   Runtime `json:"runtime_peak"`
}

// Runtime is where a harness's memory is, as its /metrics tells it. Its
// resident growth under load is about twice what Live and Stacks grew:
// the collector lets the heap grow to its goal, what is live and as much
// again as what is live and the stacks (GOGC=100), and the stacks are
// held besides.
type Runtime struct {
	Live       int64 `json:"heap_live"`  // heap live at the last collection
	Goal       int64 `json:"heap_goal"`  // the collector's goal for the heap
	Stacks     int64 `json:"stacks"`     // goroutines' stacks
	Goroutines int64 `json:"goroutines"` // goroutines
}

// runtimeOf reads a Runtime from a harness's metrics.
func runtimeOf(m drive.Metrics) Runtime {
	v := func(name string) int64 { f, _ := m.Value(name); return int64(f) }
	return Runtime{Live: v("go_gc_heap_live_bytes"), Goal: v("go_gc_heap_goal_bytes"), Stacks: v("go_memory_stacks_bytes"), Goroutines: v("go_goroutines")}
}

// most is the most of each of r's figures and o's.
func (r Runtime) most(o Runtime) Runtime {
	return Runtime{Live: max(r.Live, o.Live), Goal: max(r.Goal, o.Goal), Stacks: max(r.Stacks, o.Stacks), Goroutines: max(r.Goroutines, o.Goroutines)}
}

// floodBound bounds a FloodConfig's messages: each holds a connection of
// the measuring process and of the harness at once. floodTextBound bounds
// a message's text, well under a message body's limit.
const (
	floodBound     = 20_000
	floodTextBound = 512 << 10
)

// floodText is the text of the flood's message id: "flood id", and words
// after it up to n bytes.
func floodText(id string, n int) string {
	t := "flood " + id
	if len(t) >= n {
		return t
	}
	return t + strings.Repeat(" words", (n-len(t))/6)
}

// Flood sends cfg.Messages messages at once to one agent of a harness
// serving with --max-turns cfg.MaxTurns, each to its own conversation;
// those refused 503 are sent again after their Retry-After until
// answered. It samples the harness's resident memory throughout.
// Everything it starts is stopped before it returns.
func Flood(ctx context.Context, cfg FloodConfig) (*FloodResult, error) {
	if cfg.Messages == 0 {
		cfg.Messages = 3000
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = 500
	}
	if cfg.Messages < 1 || cfg.Messages > floodBound || cfg.MaxTurns < 1 || cfg.TextBytes < 0 || cfg.TextBytes > floodTextBound {
		return nil, fmt.Errorf("%w: a flood of %d messages of %d bytes, %d turns at once", ErrConfig, cfg.Messages, cfg.TextBytes, cfg.MaxTurns)
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "lnk loadgen: flood: "+format+"\n", args...)
		}
	}
	script := cfg.Script
	if script == nil {
		var err error
		if script, err = scripted.ParseScript(FloodScript); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	r, err := newRig(ctx, cfg.Dir, "lnk-flood-", cfg.Program, script, false, 1)
	if err != nil {
		return nil, err
	}
	defer r.close()
	agents, program := r.agents, r.program
	a := agents[0]
	say("starting %s with --max-turns %d", program, cfg.MaxTurns)
	unit, err := (&drive.Link{Program: program, MaxTurns: cfg.MaxTurns}).Start(ctx, agents)
	if err != nil {
		return nil, err
	}
	defer unit.Kill()
	if _, err := unit.Send(ctx, a.Name, "warm-up", drive.Message{ID: "warm-up", Text: "hello"}); err != nil {
		return nil, fmt.Errorf("loadgen: flood: the first message: %w", err)
	}
	res := &FloodResult{Messages: cfg.Messages, MaxTurns: cfg.MaxTurns}
	s, err := proc.Read(unit.PID(), false)
	if err != nil {
		return nil, err
	}
	res.Before, res.Peak = int64(s.RSS), int64(s.RSS)
	mr, ok := unit.(drive.MetricsReader)
	if !ok {
		return nil, fmt.Errorf("loadgen: flood: %s tells no metrics", program)
	}
	m, err := mr.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	res.RuntimeBefore = runtimeOf(m)
	res.RuntimePeak = res.RuntimeBefore
	sampled := sampleRSS(unit.PID(), &res.Peak)
	read := sampleRuntime(ctx, mr, &res.RuntimePeak)

	say("sending %d messages at once", cfg.Messages)
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range cfg.Messages {
		wg.Go(func() { floodOne(ctx, unit, a.Name, strconv.Itoa(i), cfg.TextBytes, res, &mu) })
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	sampled()
	read()
	res.Growth = res.Peak - res.Before
	say("stopping the harness")
	if err := unit.Stop(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// floodOne sends the message id to agent, each to its conversation of its
// own, again after its Retry-After as long as it is refused 503 with one,
// and counts what came into res, under mu.
func floodOne(ctx context.Context, unit drive.Unit, agent, id string, textBytes int, res *FloodResult, mu *sync.Mutex) {
	first := true
	text := floodText(id, textBytes)
	for {
		_, err := unit.Send(ctx, agent, "flood-"+id, drive.Message{ID: id, Text: text})
		var se *drive.StatusError
		refused := errors.As(err, &se) && se.Code == 503 && se.RetryAfter != ""
		mu.Lock()
		switch {
		case err == nil && first:
			res.Answered++
		case err == nil:
			res.Later++
		case refused && first:
			res.Refused++
		case refused:
		default:
			res.Other++
			if res.FirstOther == "" {
				res.FirstOther = err.Error()
			}
		}
		if refused {
			res.Retries++
		}
		mu.Unlock()
		if !refused {
			return
		}
		first = false
		wait, _ := strconv.Atoi(se.RetryAfter)
		select {
		case <-time.After(time.Duration(max(wait, 1)) * time.Second):
		case <-ctx.Done():
			return
		}
	}
}

// sampleRuntime reads the harness's runtime figures from mr every 250 ms
// into peak, the most of each, until the returned function is called. A
// page that cannot be read is passed over: the flood's answers say what
// went wrong.
func sampleRuntime(ctx context.Context, mr drive.MetricsReader, peak *Runtime) func() {
	return every(250*time.Millisecond, func() {
		if m, err := mr.Metrics(ctx); err == nil {
			*peak = peak.most(runtimeOf(m))
		}
	})
}

// sampleRSS reads pid's resident memory every 50 ms into peak, its
// highest, until the returned function is called.
func sampleRSS(pid int, peak *int64) func() {
	return every(50*time.Millisecond, func() {
		if s, err := proc.Read(pid, false); err == nil {
			*peak = max(*peak, int64(s.RSS))
		}
	})
}

// every calls sample every d, on a goroutine of its own, until the
// returned function is called; that returns once the goroutine ended.
func every(d time.Duration, sample func()) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
