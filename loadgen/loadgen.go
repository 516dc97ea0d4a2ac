package loadgen

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/loadgen/profile"
	"lnk.dev/linkharness/loadgen/scripted"
)

// DefaultScript is the scripted model's script when Config has none: a
// model that takes 50 to 250 ms and answers 100 to 1,500 bytes.
//
//go:embed testdata/default.toml
var DefaultScript []byte

// Config says what load to make. Zero fields take the defaults given.
type Config struct {
	Program       string // the lnk-link-harness program (default: as drive.FindHarness finds it)
	Agents        int    // agents in the one process (default 100)
	Conversations int    // conversations per agent (default 10)
	Messages      int    // messages per conversation (default 10)
	Concurrency   int    // conversations sent to at once (default 50)

	// ToolShare is the share of messages, 0 to 1, that make the model call
	// a built-in tool server (memory__search or file__read, in turn) and
	// answer once its result is back. Above 0, the memory and file tool
	// servers are served in this process and the harness pointed at them.
	ToolShare float64

	// Churn, above 0, is how many agents leave, and as many new ones
	// join, by one SIGHUP once half the messages are answered: the last
	// Churn agents leave, and each joining agent takes over the
	// conversations of a leaving one, from the message it refused on.
	Churn int

	Script      *scripted.Script // the model's distributions (default DefaultScript)
	Timeout     time.Duration    // one message's limit (default 60 s)
	MaxTime     time.Duration    // the whole run's limit (default 10 min)
	SampleEvery time.Duration    // memory sampled this often (default 1 s)
	Settle      time.Duration    // after the last answer, memory sampled this long more, the process idle (default none, at most 10 min)

	Profile  string    // copy the harness's CPU profile here; "" keeps none
	Dir      string    // where the temporary folder goes (default the system's)
	Progress io.Writer // a line per phase and every few seconds; nil for none
	Metrics  io.Writer // gets the harness's /metrics page once every message is answered; nil reads none
}

// Bounds on a Config.
const (
	maxAgents        = 20_000
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
		c.Settle < 0 || c.Settle > 10*time.Minute,
		!(c.ToolShare >= 0 && c.ToolShare <= 1),
		c.Churn < 0 || c.Churn > 0 && (c.Churn >= c.Agents || c.Agents+c.Churn > maxAgents):
		return fmt.Errorf("%w: %d agents, %d conversations each, %d messages each, concurrency %d, timeout %v, max time %v, sampled every %v, tool share %v, churn %d",
			ErrConfig, c.Agents, c.Conversations, c.Messages, c.Concurrency, c.Timeout, c.MaxTime, c.SampleEvery, c.ToolShare, c.Churn)
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
	rg, err := newRig(ctx, cfg.Dir, "lnk-loadgen-", cfg.Program, cfg.Script, cfg.ToolShare > 0, cfg.Agents+cfg.Churn)
	if err != nil {
		return nil, err
	}
	defer rg.close()
	res := &Result{
		Program: rg.found, Agents: cfg.Agents, Conversations: cfg.Conversations, PerConversation: cfg.Messages,
		Concurrency: cfg.Concurrency, CPUs: numCPU(), ToolShare: cfg.ToolShare,
	}
	agents, extra := rg.agents[:cfg.Agents], rg.agents[cfg.Agents:]
	unit, err := startHarness(ctx, rg.program, agents, cfg.say)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			unit.Kill()
		}
	}()
	var ch *churn
	if cfg.Churn > 0 {
		if ch, err = newChurn(unit, agents, extra, cfg.Agents*cfg.Conversations*cfg.Messages); err != nil {
			unit.Kill()
			return nil, err
		}
	}
	if err := res.load(ctx, &cfg, unit, agents, rg.model, ch); err != nil {
		return nil, err
	}
	if rg.tools != nil {
		res.fillTools(rg.tools)
	}
	if cfg.Metrics != nil {
		if err := writeMetrics(ctx, unit, cfg.Metrics); err != nil {
			return nil, err
		}
	}
	cfg.say("stopping the harness")
	stopped = true
	if err := stopHarness(unit); err != nil {
		return nil, err
	}
	if err := res.readProfile(unit, cfg.Profile); err != nil {
		return nil, err
	}
	return res, nil
}

// say writes a line of progress, if cfg has somewhere to write it.
func (c *Config) say(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "lnk loadgen: "+format+"\n", args...)
	}
}

// serveTools starts the memory and file tool servers over a home under
// tmp, and returns them with the program to run in place of program (which
// points the harness at them) and script taught to call them.
func serveTools(tmp, program string, script *scripted.Script) (*toolServers, string, *scripted.Script, error) {
	tools, err := startTools(tmp)
	if err != nil {
		return nil, "", nil, err
	}
	wrapped, err := wrapHarness(tmp, program, tools)
	if err != nil {
		tools.close()
		return nil, "", nil, err
	}
	return tools, wrapped, withTools(script), nil
}

// startHarness starts one harness process serving every agent.
func startHarness(ctx context.Context, program string, agents []drive.Agent, say func(string, ...any)) (drive.Unit, error) {
	say("starting %s serving %d agents", filepath.Base(program), len(agents))
	h := &drive.Link{Program: program, Profile: true}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return h.Start(ctx, agents)
}

// load sends every message (send) and measures the harness meanwhile: its
// memory at the start and over time, its CPU from the first message to the
// last, and what each message took.
func (r *Result) load(ctx context.Context, cfg *Config, unit drive.Unit, agents []drive.Agent, m *model, ch *churn) error {
	pid := unit.PID()
	if s, err := proc.Read(pid, true); err == nil {
		r.Start = memOf(s)
	}
	sampler := startSampler(pid, cfg.SampleEvery)
	before, err := proc.Read(pid, false)
	if err != nil {
		sampler.stop()
		return err
	}
	cfg.say("sending %d messages: %d conversations of %d agents, %d messages each, %d at once",
		cfg.Agents*cfg.Conversations*cfg.Messages, cfg.Conversations, cfg.Agents, cfg.Messages, cfg.Concurrency)
	start := time.Now()
	msgs := send(ctx, cfg, unit, agents, m, ch)
	r.Seconds = time.Since(start).Seconds()
	if ch != nil {
		if ch.err != nil {
			sampler.stop()
			return ch.err
		}
		if r.Churn, err = ch.result(msgs); err != nil {
			sampler.stop()
			return err
		}
	}
	after, err := proc.Read(pid, false)
	if err == nil && cfg.Settle > 0 {
		err = r.settle(ctx, cfg, pid)
	}
	r.Memory = sampler.stop()
	if err != nil {
		return err
	}
	r.fill(msgs, before, after)
	return nil
}

// settle waits cfg.Settle with the harness idle, its memory still
// sampled, and records its memory then: what a burst leaves behind.
func (r *Result) settle(ctx context.Context, cfg *Config, pid int) error {
	cfg.say("every message answered; the harness idle for %v", cfg.Settle)
	t := time.NewTimer(cfg.Settle)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	s, err := proc.Read(pid, true)
	if err != nil {
		return err
	}
	m := memOf(s)
	r.Settled, r.SettleSeconds = &m, cfg.Settle.Seconds()
	return nil
}

// stopHarness stops the harness gracefully, so it writes its profile.
func stopHarness(unit drive.Unit) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return unit.Stop(ctx)
}

// readProfile summarizes the CPU profile the stopped harness wrote, and
// copies it to copyTo unless that is "".
func (r *Result) readProfile(unit drive.Unit, copyTo string) error {
	p, ok := unit.(drive.Profiler)
	if !ok || p.CPUProfile() == "" {
		return nil
	}
	if sum, err := profile.Summarize([]string{p.CPUProfile()}, 8); err == nil {
		r.Profile = sum
	}
	if copyTo != "" {
		return copyFile(p.CPUProfile(), copyTo)
	}
	return nil
}

// writeMetrics writes the harness's /metrics page to w.
func writeMetrics(ctx context.Context, unit drive.Unit, w io.Writer) error {
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

// message is one message's outcome.
type message struct {
	agent   string
	id      string
	latency float64 // seconds the client waited
	model   float64 // seconds the model took for it
	tool    string  // the call it asked for, or ""
	left    bool    // sent to an agent leaving: the churn had begun
	err     error
}

// send sends every conversation its messages in order, Concurrency
// conversations at once, and returns each message's outcome.
func send(ctx context.Context, cfg *Config, unit drive.Unit, agents []drive.Agent, m *model, ch *churn) []message {
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
					rep, err := unit.Send(mctx, c.agent, thread, drive.Message{ID: token, Text: messageText(token, tool)})
					mcancel()
					// Leaving once its answer came: a message sent on a kept
					// connection just before the SIGHUP may meet the agent's
					// close of it as it leaves. Refused then, the log check
					// still says the harness never read it.
					left := ch != nil && ch.hasBegun() && ch.group[c.agent] == leaving
					if err == nil && tool != "" && !afterTool(rep.Text) {
						err = fmt.Errorf("loadgen: message %s asked for %s, and its answer is not the one after the tool's result: %.80q", token, tool, rep.Text)
					}
					r := message{agent: c.agent, id: token, latency: rep.Latency.Seconds(), model: m.took(token), tool: tool, err: err, left: left}
					mu.Lock()
					out = append(out, r)
					answered := len(out)
					mu.Unlock()
					if ch != nil {
						ch.answered(ctx, answered, cfg.say)
						if err != nil && r.left && refusal(err) {
							// Its agent left: the conversation goes on,
							// from this message, with the one that joined.
							if c.agent = ch.agentFor(ctx, c.agent); c.agent == "" {
								return
							}
							i--
						}
					}
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
				name := a.Name
				if ch != nil {
					if name = ch.agentFor(ctx, name); name == "" {
						continue
					}
				}
				for {
					select {
					case jobs <- conv{name, n, k}:
					case <-tick.C:
						mu.Lock()
						done := len(out)
						mu.Unlock()
						cfg.say("%d of %d messages answered", done, total)
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
