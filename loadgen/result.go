package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/loadgen/profile"
	"lnk.dev/linkharness/loadgen/stats"
)

// Result is one load run, as `lnk loadgen --json` writes it: times in
// seconds, sizes in bytes.
type Result struct {
	Program         string  `json:"program"`
	CPUs            int     `json:"cpus"`
	Agents          int     `json:"agents"`
	Conversations   int     `json:"conversations"`    // per agent
	PerConversation int     `json:"per_conversation"` // messages
	Concurrency     int     `json:"concurrency"`
	Seconds         float64 `json:"seconds"` // sending every message

	Messages   int     `json:"messages"` // answered
	Errors     int     `json:"errors"`   // not answered
	FirstError string  `json:"first_error,omitempty"`
	Throughput float64 `json:"throughput"` // messages answered a second

	// Latency is what the client waited; Added is that less the model's
	// time for the same message: what the harness adds.
	Latency Quantiles `json:"latency"`
	Added   Quantiles `json:"added"`
	Model   Quantiles `json:"model"`

	CPU           float64 `json:"cpu"`             // the harness's CPU seconds over the messages
	CPUPerMessage float64 `json:"cpu_per_message"` // and per message answered
	CPUShare      float64 `json:"cpu_share"`       // of the machine's CPUs over the run, 0 to 1

	Start  Memory         `json:"start"`  // once listening
	Memory []MemorySample `json:"memory"` // over the run
	Peak   Memory         `json:"peak"`
	// Settled is the memory once the harness was idle for SettleSeconds
	// after the last answer; nil unless Config.Settle asked for it.
	Settled       *Memory `json:"settled,omitempty"`
	SettleSeconds float64 `json:"settle_seconds,omitempty"`

	// With a tool share: the messages that asked for a tool call, the calls
	// the tool servers answered (by call) and the sessions they started, the
	// conversations the calls said they were made for and the calls that
	// said none, the calls a second, each call's time in its server, and
	// the harness's added latency of the messages with a tool call and of
	// those without. A tool message's added latency holds its call's time in
	// the server.
	ToolShare         float64        `json:"tool_share,omitempty"`
	ToolMessages      int            `json:"tool_messages,omitempty"`
	ToolCalls         map[string]int `json:"tool_calls,omitempty"`
	ToolSessions      int            `json:"tool_sessions,omitempty"`
	ToolConversations int            `json:"tool_conversations,omitempty"`
	ToolUnsaid        int            `json:"tool_calls_unsaid,omitempty"`
	ToolPerSecond     float64        `json:"tool_calls_per_second,omitempty"`
	ToolTime          *Quantiles     `json:"tool_time,omitempty"`
	AddedTools        *Quantiles     `json:"added_tools,omitempty"`
	AddedPlain        *Quantiles     `json:"added_plain,omitempty"`

	// Churn is what joining and leaving did, with Config.Churn; its
	// refused messages are not among Errors, and the messages that went on
	// with a joining agent in their place are among Messages.
	Churn *Churn `json:"churn,omitempty"`

	Profile *profile.Summary `json:"profile,omitempty"`
}

// Quantiles of some times.
type Quantiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func quantiles(xs []float64) Quantiles {
	return Quantiles{Mean: stats.Mean(xs), P50: stats.Quantile(xs, 0.5), P90: stats.Quantile(xs, 0.9),
		P99: stats.Quantile(xs, 0.99), Max: stats.Quantile(xs, 1)}
}

// Memory is the harness process's memory.
type Memory struct {
	RSS  uint64 `json:"rss"`
	PSS  uint64 `json:"pss"`
	Anon uint64 `json:"anon"`
	FDs  int    `json:"fds"` // descriptors open
}

func memOf(s proc.Sample) Memory { return Memory{RSS: s.RSS, PSS: s.PSS, Anon: s.Anon, FDs: s.FDs} }

// MemorySample is the memory at a moment of the run.
type MemorySample struct {
	Seconds float64 `json:"t"` // since the messages began
	Memory
}

func (r *Result) fill(msgs []message, before, after proc.Sample) {
	var lat, added, mod, addedTools, addedPlain []float64
	refused := 0
	for _, m := range msgs {
		if m.err != nil && m.left && refusal(m.err) {
			refused++
			continue
		}
		if m.err != nil {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = m.err.Error()
			}
			continue
		}
		r.Messages++
		lat = append(lat, m.latency)
		mod = append(mod, m.model)
		added = append(added, max(m.latency-m.model, 0))
		if m.tool != "" {
			r.ToolMessages++
			addedTools = append(addedTools, added[len(added)-1])
		} else {
			addedPlain = append(addedPlain, added[len(added)-1])
		}
	}
	if r.ToolShare > 0 {
		qt, qp := quantiles(addedTools), quantiles(addedPlain)
		r.AddedTools, r.AddedPlain = &qt, &qp
	}
	r.Errors += r.Agents*r.Conversations*r.PerConversation - (len(msgs) - refused) // never sent: the run ran out of time
	r.Latency, r.Added, r.Model = quantiles(lat), quantiles(added), quantiles(mod)
	if r.Seconds > 0 {
		r.Throughput = float64(r.Messages) / r.Seconds
	}
	r.CPU = proc.CPUSeconds(before, after)
	if r.Messages > 0 {
		r.CPUPerMessage = r.CPU / float64(r.Messages)
	}
	if r.Seconds > 0 && r.CPUs > 0 {
		r.CPUShare = r.CPU / r.Seconds / float64(r.CPUs)
	}
	for _, s := range r.Memory {
		r.Peak.RSS = max(r.Peak.RSS, s.RSS)
		r.Peak.PSS = max(r.Peak.PSS, s.PSS)
		r.Peak.Anon = max(r.Peak.Anon, s.Anon)
		r.Peak.FDs = max(r.Peak.FDs, s.FDs)
	}
}

// fillTools adds what the tool servers saw.
func (r *Result) fillTools(t *toolServers) {
	calls, sessions, times := t.seen()
	r.ToolCalls, r.ToolSessions = calls, sessions
	r.ToolConversations, r.ToolUnsaid = t.conversations()
	n := 0
	for _, c := range calls {
		n += c
	}
	if r.Seconds > 0 {
		r.ToolPerSecond = float64(n) / r.Seconds
	}
	q := quantiles(times)
	r.ToolTime = &q
}

func numCPU() int { return runtime.NumCPU() }

// sampler samples a process's memory every so often, at most maxSamples
// times.
type sampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	out  []MemorySample // guarded by mu
}

func startSampler(pid int, every time.Duration) *sampler {
	s := &sampler{done: make(chan struct{})}
	start := time.Now()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for range maxSamples {
			if ps, err := proc.Read(pid, true); err == nil {
				s.mu.Lock()
				s.out = append(s.out, MemorySample{Seconds: time.Since(start).Seconds(), Memory: memOf(ps)})
				s.mu.Unlock()
			}
			select {
			case <-t.C:
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func (s *sampler) stop() []MemorySample {
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes r for people.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "lnk loadgen: %d agents in one process, %d conversations each, %d messages each, %d at once, on %d CPUs\n",
		r.Agents, r.Conversations, r.PerConversation, r.Concurrency, r.CPUs)
	fmt.Fprintf(tw, "messages\t%d answered, %d errors, in %.1f s: %.0f a second\t\n", r.Messages, r.Errors, r.Seconds, r.Throughput)
	if r.FirstError != "" {
		fmt.Fprintf(tw, "first error\t%s\t\n", r.FirstError)
	}
	q := func(name string, x Quantiles) {
		fmt.Fprintf(tw, "%s\tp50 %s  p90 %s  p99 %s  max %s  (mean %s)\t\n", name, ms(x.P50), ms(x.P90), ms(x.P99), ms(x.Max), ms(x.Mean))
	}
	q("added by the harness", r.Added)
	q("latency", r.Latency)
	q("model", r.Model)
	if r.ToolShare > 0 {
		n, names := 0, make([]string, 0, len(r.ToolCalls))
		for name, c := range r.ToolCalls {
			n += c
			names = append(names, fmt.Sprintf("%s %d", name, c))
		}
		sort.Strings(names)
		fmt.Fprintf(tw, "tool calls\t%d (%s) for %d messages asking (%.0f%%), %.1f a second; %d sessions\t\n",
			n, strings.Join(names, ", "), r.ToolMessages, r.ToolShare*100, r.ToolPerSecond, r.ToolSessions)
		fmt.Fprintf(tw, "calls' conversations\t%d said, %d calls saying none\t\n", r.ToolConversations, r.ToolUnsaid)
		q("added, with a tool call", *r.AddedTools)
		q("added, without", *r.AddedPlain)
		q("a call in its tool server", *r.ToolTime)
	}
	if c := r.Churn; c != nil {
		o := func(name string, x Outcome) {
			fmt.Fprintf(tw, "%s\t%d sent, %d answered, %d refused, %d errors\t\n", name, x.Sent, x.Answered, x.Refused, x.Errors)
			if x.FirstError != "" {
				fmt.Fprintf(tw, "\tfirst error: %s\t\n", x.FirstError)
			}
		}
		fmt.Fprintf(tw, "churn\t%d agents left and %d joined by one SIGHUP at %d answered; every joining agent listening %.0f ms after it\t\n",
			c.Left, c.Joined, c.At, c.Seconds*1e3)
		o("  agents that stayed", c.Stayed)
		o("  agents that left", c.Leaving)
		o("  agents that joined", c.Joining)
	}
	fmt.Fprintf(tw, "harness CPU\t%.2f s, %s a message, %.0f%% of %d CPUs\t\n", r.CPU, ms(r.CPUPerMessage), r.CPUShare*100, r.CPUs)
	fmt.Fprintf(tw, "memory\tRSS %s at start, %s at peak; anon %s at peak; %d samples\t\n", mb(r.Start.RSS), mb(r.Peak.RSS), mb(r.Peak.Anon), len(r.Memory))
	fmt.Fprintf(tw, "descriptors\t%d at start, %d at peak\t\n", r.Start.FDs, r.Peak.FDs)
	if m := r.Settled; m != nil {
		fmt.Fprintf(tw, "memory, idle\tRSS %s, anon %s, %.0f s after the last answer\t\n", mb(m.RSS), mb(m.Anon), r.SettleSeconds)
	}
	tw.Flush()
	if len(r.Memory) > 0 {
		fmt.Fprint(w, "memory over time (s: RSS MB):")
		step := max(1, len(r.Memory)/12)
		for i := 0; i < len(r.Memory); i += step {
			s := r.Memory[i]
			fmt.Fprintf(w, " %.0f: %.1f", s.Seconds, float64(s.RSS)/1e6)
		}
		fmt.Fprintln(w)
	}
	if p := r.Profile; p != nil && len(p.Flat) > 0 {
		fmt.Fprintf(w, "largest bottleneck: %s (%.1f%% of %.1f s CPU sampled)", p.Largest, p.Flat[0].Share*100, p.Seconds)
		if p.Via != "" {
			fmt.Fprintf(w, ", via %s", p.Via)
		}
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "flat\t\tcumulative\t")
		for i := range max(len(p.Flat), len(p.Cum)) {
			var f, c string
			if i < len(p.Flat) {
				f = fmt.Sprintf("%.1f%%\t%s", p.Flat[i].Share*100, p.Flat[i].Name)
			} else {
				f = "\t"
			}
			if i < len(p.Cum) {
				c = fmt.Sprintf("%.1f%%  %s", p.Cum[i].Share*100, p.Cum[i].Name)
			}
			fmt.Fprintf(tw, "%s\t%s\t\n", f, c)
		}
		tw.Flush()
	}
	return nil
}

func ms(s float64) string { return fmt.Sprintf("%.2f ms", s*1e3) }
func mb(b uint64) string  { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
