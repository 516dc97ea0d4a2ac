package loadgen

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/measure"
)

// DefaultScript is the scripted model's script when Config has none: a
// model that takes 50 to 250 ms and answers 100 to 1,500 bytes.
//
//go:embed testdata/default.toml
var DefaultScript []byte

// Config says what load to make. Zero fields take the defaults given.
type Config struct {
	Program       string // the lnk-link-harness program (default: as measure.FindHarness finds it)
	Agents        int    // agents in the one process (default 100)
	Conversations int    // conversations per agent (default 10)
	Messages      int    // messages per conversation (default 10)
	Concurrency   int    // conversations sent to at once (default 50)

	// ToolShare is the share of messages, 0 to 1, that make the model call
	// a built-in tool server (memory__search or file__read, in turn) and
	// answer once its result is back. Above 0, the memory and file tool
	// servers are served in this process and the harness pointed at them.
	ToolShare float64

	Script      *scripted.Script // the model's distributions (default DefaultScript)
	Timeout     time.Duration    // one message's limit (default 60 s)
	MaxTime     time.Duration    // the whole run's limit (default 10 min)
	SampleEvery time.Duration    // memory sampled this often (default 1 s)

	Profile  string    // copy the harness's CPU profile here; "" keeps none
	Dir      string    // where the temporary folder goes (default the system's)
	Progress io.Writer // a line per phase and every few seconds; nil for none
	Metrics  io.Writer // gets the harness's /metrics page once every message is answered; nil reads none
}

// Bounds on a Config.
const (
	maxAgents        = 1000
	maxConversations = 1000
	maxTotal         = 1_000_000 // messages in one run
	maxSamples       = 3600
)

// ErrConfig comes from Run for a Config out of bounds.
var ErrConfig = errors.New("loadgen: bad config")

func (c *Config) setDefaults() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Agents, 100)
	def(&c.Conversations, 10)
	def(&c.Messages, 10)
	def(&c.Concurrency, 50)
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	if c.MaxTime == 0 {
		c.MaxTime = 10 * time.Minute
	}
	if c.SampleEvery == 0 {
		c.SampleEvery = time.Second
	}
	if c.Script == nil {
		s, err := scripted.ParseScript(DefaultScript)
		if err != nil {
			return err
		}
		c.Script = s
	}
	switch {
	case c.Agents < 1 || c.Agents > maxAgents, c.Conversations < 1 || c.Conversations > maxConversations,
		c.Messages < 1, c.Agents*c.Conversations*c.Messages > maxTotal,
		c.Concurrency < 1 || c.Concurrency > 10_000, c.Timeout < 0, c.MaxTime < 0, c.SampleEvery < 10*time.Millisecond,
		!(c.ToolShare >= 0 && c.ToolShare <= 1):
		return fmt.Errorf("%w: %d agents, %d conversations each, %d messages each, concurrency %d, timeout %v, max time %v, sampled every %v, tool share %v",
			ErrConfig, c.Agents, c.Conversations, c.Messages, c.Concurrency, c.Timeout, c.MaxTime, c.SampleEvery, c.ToolShare)
	}
	return nil
}

// Run makes the load cfg says and returns what it measured. Everything it
// starts is stopped before it returns.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxTime)
	defer cancel()
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "lnk loadgen: "+format+"\n", args...)
		}
	}
	tmp, err := os.MkdirTemp(cfg.Dir, "lnk-loadgen-")
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	defer os.RemoveAll(tmp)
	program, _, err := measure.FindHarness(ctx, cfg.Program, tmp)
	if err != nil {
		return nil, err
	}
	res := &Result{
		Program: program, Agents: cfg.Agents, Conversations: cfg.Conversations, PerConversation: cfg.Messages,
		Concurrency: cfg.Concurrency, CPUs: numCPU(), ToolShare: cfg.ToolShare,
	}

	script := cfg.Script
	var tools *toolServers
	if cfg.ToolShare > 0 {
		script = withTools(script)
		if tools, err = startTools(tmp); err != nil {
			return nil, err
		}
		defer tools.close()
		if program, err = wrapHarness(tmp, program, tools); err != nil {
			return nil, err
		}
	}
	m, err := startModel(script)
	if err != nil {
		return nil, err
	}
	defer m.close()

	agents, err := makeAgents(tmp, cfg.Agents, m.url)
	if err != nil {
		return nil, err
	}
	say("starting %s serving %d agents", filepath.Base(program), cfg.Agents)
	h := &measure.Link{Program: program, Profile: true}
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	unit, err := h.Start(sctx, agents)
	scancel()
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			unit.Kill()
		}
	}()
	pid := unit.PID()
	if s, err := measure.SampleProc(pid, true); err == nil {
		res.Start = memOf(s)
	}

	// Memory over time, while the load runs.
	sampler := startSampler(pid, cfg.SampleEvery)
	before, err := measure.SampleProc(pid, false)
	if err != nil {
		return nil, err
	}
	say("sending %d messages: %d conversations of %d agents, %d messages each, %d at once",
		cfg.Agents*cfg.Conversations*cfg.Messages, cfg.Conversations, cfg.Agents, cfg.Messages, cfg.Concurrency)
	start := time.Now()
	msgs := send(ctx, &cfg, unit, agents, m, say)
	res.Seconds = time.Since(start).Seconds()
	after, err := measure.SampleProc(pid, false)
	if err != nil {
		return nil, err
	}
	res.Memory = sampler.stop()
	res.fill(msgs, before, after)
	if tools != nil {
		res.fillTools(tools)
	}
	if cfg.Metrics != nil {
		if err := writeMetrics(ctx, unit, cfg.Metrics); err != nil {
			return nil, err
		}
	}
	say("stopping the harness")
	stopped = true
	stctx, stcancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = unit.Stop(stctx)
	stcancel()
	if err != nil {
		return nil, err
	}
	if p, ok := unit.(measure.Profiler); ok && p.CPUProfile() != "" {
		if sum, err := measure.SummarizeProfiles([]string{p.CPUProfile()}, 8); err == nil {
			res.Profile = sum
		}
		if cfg.Profile != "" {
			if err := copyFile(p.CPUProfile(), cfg.Profile); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// writeMetrics writes the harness's /metrics page to w.
func writeMetrics(ctx context.Context, unit measure.Unit, w io.Writer) error {
	p, ok := unit.(interface {
		MetricsPage(context.Context) ([]byte, error)
	})
	if !ok {
		return fmt.Errorf("loadgen: the harness gives no /metrics page")
	}
	page, err := p.MetricsPage(ctx)
	if err != nil {
		return err
	}
	_, err = w.Write(page)
	return err
}

// makeAgents makes n agents' homes and key files under dir.
func makeAgents(dir string, n int, model string) ([]measure.Agent, error) {
	var out []measure.Agent
	for i := range n {
		name := fmt.Sprintf("agent-%d", i+1)
		a := measure.Agent{
			Name:    name,
			Home:    filepath.Join(dir, "agents", name),
			KeyFile: filepath.Join(dir, "keys", name+".key"),
			Scratch: filepath.Join(dir, "run", name),
			Model:   model,
			Key:     newKey(),
		}
		for _, d := range []string{a.Home, a.Scratch, filepath.Dir(a.KeyFile)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("loadgen: %w", err)
			}
		}
		if err := os.WriteFile(a.KeyFile, []byte(a.Key+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

func newKey() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// message is one message's outcome.
type message struct {
	latency float64 // seconds the client waited
	model   float64 // seconds the model took for it
	tool    string  // the call it asked for, or ""
	err     error
}

// send sends every conversation its messages in order, Concurrency
// conversations at once, and returns each message's outcome.
func send(ctx context.Context, cfg *Config, unit measure.Unit, agents []measure.Agent, m *model, say func(string, ...any)) []message {
	type conv struct {
		agent string
		n     int
		k     int // the run's count of messages before its first
	}
	jobs := make(chan conv)
	total := len(agents) * cfg.Conversations * cfg.Messages
	out := make([]message, 0, total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(cfg.Concurrency, len(agents)*cfg.Conversations) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				thread := fmt.Sprintf("conv-%d", c.n)
				for i := 1; i <= cfg.Messages; i++ {
					token := fmt.Sprintf("lg-%s-%d-%d", c.agent, c.n, i)
					tool := toolMessage(c.k+i-1, cfg.ToolShare)
					mctx, mcancel := context.WithTimeout(ctx, cfg.Timeout)
					rep, err := unit.Send(mctx, c.agent, thread, measure.Message{ID: token, Text: messageText(token, tool)})
					mcancel()
					if err == nil && tool != "" && !afterTool(rep.Text) {
						err = fmt.Errorf("loadgen: message %s asked for %s, and its answer is not the one after the tool's result: %.80q", token, tool, rep.Text)
					}
					r := message{latency: rep.Latency.Seconds(), model: m.took(token), tool: tool, err: err}
					mu.Lock()
					out = append(out, r)
					mu.Unlock()
					if ctx.Err() != nil {
						return
					}
				}
			}
		}()
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	func() {
		defer close(jobs)
		for n := 1; n <= cfg.Conversations; n++ {
			for ai, a := range agents {
				k := ((n-1)*len(agents) + ai) * cfg.Messages
				for {
					select {
					case jobs <- conv{a.Name, n, k}:
					case <-tick.C:
						mu.Lock()
						done := len(out)
						mu.Unlock()
						say("%d of %d messages answered", done, total)
						continue
					case <-ctx.Done():
						return
					}
					break
				}
			}
		}
	}()
	wg.Wait()
	return out
}

// afterTool tells whether an answer is the scripted model's answer after a
// tool's result: toolAnswer, or as much of it as the answer's length let be.
func afterTool(text string) bool {
	return text != "" && (strings.HasPrefix(text, toolAnswer) || strings.HasPrefix(toolAnswer, text))
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("loadgen: profile: %w", err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		return fmt.Errorf("loadgen: profile: %w", err)
	}
	return nil
}
