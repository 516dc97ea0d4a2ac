package report

import (
	"encoding/json"
	"io"
	"sort"
	"time"

	"lnk.dev/linkharness/loadgen/profile"
	"lnk.dev/linkharness/loadgen/stats"
)

// ResultVersion is the version of Result's JSON shape. It changes only when
// a field changes meaning or goes; fields may be added within a version.
const ResultVersion = 2 // 2: idle memory after the warm-up and a collection; CPU per message a mean

// Result is a whole measurement, as `lnk measure --json` writes it. Times
// are in seconds and sizes in bytes, both as plain numbers; "per message"
// figures are means over the measured messages unless a Spread says more.
type Result struct {
	Version  int       `json:"version"`           // ResultVersion
	Harness  string    `json:"harness"`           // "link"
	Program  string    `json:"program"`           // the harness program run
	Command  string    `json:"command,omitempty"` // the command line that made it, when told
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"` // the whole run, building included
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`
	Cases    []Case    `json:"cases"`

	// Marginal is, for each layout, what one more idle agent and one more
	// message cost: the figures to compare between harnesses.
	Marginal []Marginal `json:"marginal,omitempty"`

	// Peers are the other harnesses measured in the same run, each one
	// agent, against the same scripted model.
	Peers []PeerResult `json:"peers,omitempty"`

	// Profile is where the harness processes spent their CPU over every
	// case, nil when no profile was written.
	Profile *profile.Summary `json:"profile,omitempty"`
}

// PeerResult is one other harness measured beside Link Harness: one
// agent, a command per message, its idle program in a terminal.
type PeerResult struct {
	Harness     string  `json:"harness"`
	Version     string  `json:"version,omitempty"`
	Program     string  `json:"program,omitempty"`
	Messages    int     `json:"messages"`     // measured, after one warm-up (the conversation's first)
	IdleSeconds float64 `json:"idle_seconds"` // the idle program's settling time, and the quiet window after it
	Case        Case    `json:"case"`

	// NotRun, when set, says why the peer was not measured (what is
	// missing and how to get it, or how its run failed); Case is then
	// empty.
	NotRun string `json:"not_run,omitempty"`
}

// Machine is where the measurement ran.
type Machine struct {
	CPUs   int    `json:"cpus"`
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
}

// Settings are the measurement's settings, as run.
type Settings struct {
	Messages         int      `json:"messages"` // measured per agent and case
	Warmup           int      `json:"warmup"`   // sent per agent before measuring, not counted
	Concurrency      int      `json:"concurrency"`
	IdleSeconds      float64  `json:"idle_seconds"` // the quiet window
	Lengths          []int    `json:"lengths"`
	Agents           []int    `json:"agents"`
	AgentsPerProcess int      `json:"agents_per_process"`
	Layouts          []Layout `json:"layouts"`
	Thread           string   `json:"thread"`
	Profiled         bool     `json:"profiled"` // the processes ran with --cpuprofile
}

// Layout is how a case's agents are put in processes.
type Layout string

// The layouts.
const (
	// Each is a process for every agent (or for every AgentsPerProcess
	// agents), as one agent alone is served.
	Each Layout = "each"
	// Shared is one process serving every agent of the case, as a
	// shared_harness machine runs them (serve --agents FILE).
	Shared Layout = "shared"
)

// Case is one conversation length and one count of agents.
type Case struct {
	Length    int    `json:"length"` // events in each agent's conversation before the first message
	Agents    int    `json:"agents"`
	Processes int    `json:"processes"`
	Layout    Layout `json:"layout"`   // each, or shared: every agent in one process
	Messages  int    `json:"messages"` // measured messages answered, over every agent
	// MessagesPerAgent is the measured messages sent to each agent, and
	// Warmup those each answered before its idle memory was read.
	MessagesPerAgent int `json:"messages_per_agent"`
	Warmup           int `json:"warmup"`
	Errors           int `json:"errors"` // measured messages not answered
	// FirstError is the first message's error, if any.
	FirstError string `json:"first_error,omitempty"`

	// Model is what the harness asked of the scripted model, per measured
	// message.
	Model ModelCost `json:"model"`

	// Median is each figure's median over the agents; PerAgent each
	// agent's own.
	Median   AgentCost   `json:"median"`
	PerAgent []AgentCost `json:"per_agent"`

	// Total is the case's processes together.
	Total Total `json:"total"`

	// Asleep is the case's processes with every agent asleep, when its
	// agents sleep (the layout Shared, served from an agents file).
	Asleep *Asleep `json:"asleep,omitempty"`
}

// Asleep is what a case's processes hold with every agent asleep, each
// sampled once the process said all sleep and gave their memory back
// after a collection, summed over the processes.
type Asleep struct {
	Fresh  Memory  `json:"fresh"`  // before any message
	Worked Memory  `json:"worked"` // after the warm-up (Case.Warmup messages each)
	CPU    float64 `json:"cpu"`    // CPU seconds per second over a quiet window asleep
	// Woken is how many agents answered a message sent once all slept
	// (after the warm-up); WakeErrors how many did not.
	Woken         int     `json:"woken"`
	WakeErrors    int     `json:"wake_errors"`
	FirstWakeErr  string  `json:"first_wake_error,omitempty"`
	WindowSeconds float64 `json:"window_seconds"`
}

// Total is what all of a case's processes cost together.
type Total struct {
	// IdleMemory is the idle memory of every process, summed, after the
	// warm-up; StartMemory before any message.
	IdleMemory  Memory `json:"idle_memory"`
	StartMemory Memory `json:"start_memory"`
	// IdleCPU is every process's CPU seconds per second over the quiet
	// window, summed.
	IdleCPU float64 `json:"idle_cpu"`
	// CPUPerMessage is every process's CPU over the measured messages,
	// divided by the messages answered.
	CPUPerMessage float64 `json:"cpu_per_message"`
}

// ModelCost is the model's side of a message.
type ModelCost struct {
	Requests     float64 `json:"requests"`      // model requests per message
	RequestBytes float64 `json:"request_bytes"` // mean body of a request
	MaxBytes     float64 `json:"max_bytes"`     // the largest body
	Seconds      float64 `json:"seconds"`       // the model server's own time per message
}

// AgentCost is what one agent cost. With several agents in one process,
// memory and CPU are the process's divided among them.
type AgentCost struct {
	Name string `json:"name,omitempty"`
	PID  int    `json:"pid,omitempty"`

	// Start is the memory once it listens, before any message.
	Start Memory `json:"start"`
	// Idle is the quiet window after the warm-up (for a peer, after its
	// messages).
	Idle Idle `json:"idle"`
	// PerMessage is each measured message's cost.
	PerMessage PerMessage `json:"per_message"`
}

// Memory is a process's memory: resident and proportional bytes, and the
// resident bytes backed by no file (the heap, stacks; not the program's
// code or a file mapped in).
type Memory struct {
	RSS  float64 `json:"rss"`
	PSS  float64 `json:"pss"`
	Anon float64 `json:"anon"`
}

// Idle is an agent's cost doing nothing.
type Idle struct {
	Memory
	CPU        float64 `json:"cpu"`        // CPU seconds per second over the window
	Goroutines float64 `json:"goroutines"` // of its process, awake after the warm-up
}

// PerMessage is an agent's cost per message.
type PerMessage struct {
	CPU float64 `json:"cpu"` // CPU seconds of its process (user + system)

	// Latency is the wall time the client waited; Added is that less the
	// model's share (Model), the time the harness itself adds.
	Latency Spread  `json:"latency"`
	Added   Spread  `json:"added"`
	Turn    float64 `json:"turn"`  // the harness's own time for the turn (lnk_turn_seconds)
	Model   float64 `json:"model"` // the model calls' share of it (lnk_model_call_seconds)

	// Bytes: passed to read and write calls of any kind (files, sockets;
	// /proc/PID/io rchar and wchar), fetched from and sent to storage
	// (read_bytes and write_bytes), and event bytes the store read and
	// wrote (lnk_store_bytes_*).
	ReadChars    float64 `json:"read_chars"`
	WrittenChars float64 `json:"written_chars"`
	DiskRead     float64 `json:"disk_read"`
	DiskWritten  float64 `json:"disk_written"`
	StoreRead    float64 `json:"store_read"`
	StoreWritten float64 `json:"store_written"`
	// PeakRSS is, for a harness run as a command per message, the largest
	// resident memory of one message's command.
	PeakRSS           float64 `json:"peak_rss,omitempty"`
	Allocs            float64 `json:"allocs"`      // heap objects allocated
	AllocBytes        float64 `json:"alloc_bytes"` // heap bytes allocated
	Errors            int     `json:"errors"`
	MessagesCounted   int     `json:"messages"`
	TurnsCounted      float64 `json:"turns"` // turns the harness counted meanwhile
	TurnErrorsCounted float64 `json:"turn_errors"`
}

// Spread is a mean and two quantiles of some values.
type Spread struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

// SpreadOf is the mean, median and p99 of xs.
func SpreadOf(xs []float64) Spread {
	return Spread{Mean: stats.Mean(xs), P50: stats.Quantile(xs, 0.5), P99: stats.Quantile(xs, 0.99)}
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MedianOf returns each figure's median over costs, with no name or pid.
func MedianOf(costs []AgentCost) AgentCost {
	var m AgentCost
	if len(costs) == 0 {
		return m
	}
	for _, f := range costFields {
		xs := make([]float64, len(costs))
		for i := range costs {
			xs[i] = *f(&costs[i])
		}
		*f(&m) = mid(xs)
	}
	ints := make([]float64, len(costs))
	for i := range costs {
		ints[i] = float64(costs[i].PerMessage.MessagesCounted)
	}
	m.PerMessage.MessagesCounted = int(mid(ints))
	for i := range costs {
		ints[i] = float64(costs[i].PerMessage.Errors)
	}
	m.PerMessage.Errors = int(mid(ints))
	return m
}

// mid is the median: the middle value, or the mean of the middle two.
func mid(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// costFields are AgentCost's figures, for median.
var costFields = []func(*AgentCost) *float64{
	func(c *AgentCost) *float64 { return &c.Start.RSS },
	func(c *AgentCost) *float64 { return &c.Start.PSS },
	func(c *AgentCost) *float64 { return &c.Idle.RSS },
	func(c *AgentCost) *float64 { return &c.Idle.PSS },
	func(c *AgentCost) *float64 { return &c.Idle.Anon },
	func(c *AgentCost) *float64 { return &c.Start.Anon },
	func(c *AgentCost) *float64 { return &c.Idle.CPU },
	func(c *AgentCost) *float64 { return &c.Idle.Goroutines },
	func(c *AgentCost) *float64 { return &c.PerMessage.CPU },
	func(c *AgentCost) *float64 { return &c.PerMessage.Latency.Mean },
	func(c *AgentCost) *float64 { return &c.PerMessage.Latency.P50 },
	func(c *AgentCost) *float64 { return &c.PerMessage.Latency.P99 },
	func(c *AgentCost) *float64 { return &c.PerMessage.Added.Mean },
	func(c *AgentCost) *float64 { return &c.PerMessage.Added.P50 },
	func(c *AgentCost) *float64 { return &c.PerMessage.Added.P99 },
	func(c *AgentCost) *float64 { return &c.PerMessage.Turn },
	func(c *AgentCost) *float64 { return &c.PerMessage.Model },
	func(c *AgentCost) *float64 { return &c.PerMessage.ReadChars },
	func(c *AgentCost) *float64 { return &c.PerMessage.WrittenChars },
	func(c *AgentCost) *float64 { return &c.PerMessage.DiskRead },
	func(c *AgentCost) *float64 { return &c.PerMessage.DiskWritten },
	func(c *AgentCost) *float64 { return &c.PerMessage.StoreRead },
	func(c *AgentCost) *float64 { return &c.PerMessage.StoreWritten },
	func(c *AgentCost) *float64 { return &c.PerMessage.Allocs },
	func(c *AgentCost) *float64 { return &c.PerMessage.PeakRSS },
	func(c *AgentCost) *float64 { return &c.PerMessage.AllocBytes },
	func(c *AgentCost) *float64 { return &c.PerMessage.TurnsCounted },
	func(c *AgentCost) *float64 { return &c.PerMessage.TurnErrorsCounted },
}
