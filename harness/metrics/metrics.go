// Package metrics keeps Link Harness's metrics and writes them in the
// Prometheus text format, by hand: histograms of latency, counters of
// turns, tokens, cost and bytes. Recording is a few atomic adds and never
// allocates, so a turn pays nothing it could notice; labels are bounded
// (agent, provider, outcome, kind, status), never a thread or a message.
package metrics

import (
	"fmt"
	"io"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The buckets every histogram has, fixed here and nowhere else: upper
// bounds doubling from 1 ms to 65.536 s, then +Inf.
const (
	firstBound = time.Millisecond
	nBounds    = 17
)

// bound returns the upper bound of bucket i.
func bound(i int) time.Duration { return firstBound << i }

// Histogram counts durations into the fixed buckets. The zero value is
// ready to use; it is safe for concurrent use.
type Histogram struct {
	counts [nBounds + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Int64               // nanoseconds
}

// Observe counts d.
func (h *Histogram) Observe(d time.Duration) {
	i := 0
	for i < nBounds && d > bound(i) {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Count returns how many durations were counted.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// write writes h's series with labels (`a="x",b="y"`, no braces).
func (h *Histogram) write(w io.Writer, name, labels string) {
	var cum uint64
	sep, set := ",", "{"+labels+"}"
	if labels == "" {
		sep, set = "", ""
	}
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := "+Inf"
		if i < nBounds {
			le = strconv.FormatFloat(bound(i).Seconds(), 'g', -1, 64)
		}
		fmt.Fprintf(w, "%s_bucket{%s%sle=%q} %d\n", name, labels, sep, le, cum)
	}
	fmt.Fprintf(w, "%s_sum%s %s\n%s_count%s %d\n", name, set, seconds(h.sum.Load()), name, set, cum)
}

// Outcome is how a timed thing ended: a label value.
type Outcome int

// Outcomes.
const (
	OK Outcome = iota
	Failed
	nOutcomes
)

var outcomeNames = [nOutcomes]string{"ok", "error"}

// OutcomeOf is Failed when err is not nil.
func OutcomeOf(err error) Outcome {
	if err != nil {
		return Failed
	}
	return OK
}

// Token kinds: a label value.
const (
	Input = iota
	Output
	CacheRead
	CacheWrite
	nKinds
)

var kindNames = [nKinds]string{"input", "output", "cache_read", "cache_write"}

// Process is what the agents of one process share of their metrics: the
// histograms of time. An agent's own are counters, so a process of many
// agents writes a line or a few for each, not a series of each bucket of
// each. The zero value is ready to use; it is safe for concurrent use.
type Process struct {
	turns [nOutcomes]Histogram
	tools [nOutcomes]Histogram
	fsync Histogram

	calls byName[*[nOutcomes]Histogram] // by provider
}

// provider is the process's histograms of model calls to name, made on
// first use; nil for a nil Process. After the first, it does not allocate.
func (p *Process) provider(name string) *[nOutcomes]Histogram {
	if p == nil {
		return nil
	}
	return p.calls.get(name, func() *[nOutcomes]Histogram { return new([nOutcomes]Histogram) })
}

// observe counts d in h[o], when there is h.
func observe(h *[nOutcomes]Histogram, o Outcome, d time.Duration) {
	if h != nil {
		h[o].Observe(d)
	}
}

// Agent is one agent's metrics: counters, and the process's histograms
// when Process is set. Its zero value, with Name set, is ready to use; it
// is safe for concurrent use, and a nil *Agent counts nothing.
type Agent struct {
	Name    string
	Process *Process // the histograms the agent's times go into too; nil: none

	turns        [nOutcomes]atomic.Uint64
	turnNanos    atomic.Int64
	tools        [nOutcomes]atomic.Uint64
	fsyncs       atomic.Uint64
	bytesRead    atomic.Int64
	bytesWritten atomic.Int64
	summaries    [nOutcomes]atomic.Uint64
	summaryToks  [nKinds]atomic.Int64
	ops          [nOps]atomic.Uint64

	providers byName[*Provider]
}

// Turn counts a turn of d that ended with err, and the bytes it read from
// the store and wrote.
func (a *Agent) Turn(d time.Duration, err error, read, written int64) {
	if a == nil {
		return
	}
	o := OutcomeOf(err)
	a.turns[o].Add(1)
	a.turnNanos.Add(int64(d))
	if a.Process != nil {
		a.Process.turns[o].Observe(d)
	}
	a.bytesRead.Add(read)
	a.bytesWritten.Add(written)
}

// Tool counts a tool call of d; failed says it was answered with an error.
func (a *Agent) Tool(d time.Duration, failed bool) {
	if a == nil {
		return
	}
	o := OK
	if failed {
		o = Failed
	}
	a.tools[o].Add(1)
	if a.Process != nil {
		a.Process.tools[o].Observe(d)
	}
}

// Synced counts an fsync of d: the stores' Synced hook.
func (a *Agent) Synced(d time.Duration) {
	if a == nil {
		return
	}
	a.fsyncs.Add(1)
	if a.Process != nil {
		a.Process.fsync.Observe(d)
	}
}

// Summary counts a summary asked after an answer that ended with err (a
// refused or cut one is an error too), and the tokens it used; one that
// failed may have used some.
func (a *Agent) Summary(err error, input, output, cacheRead, cacheWrite int64) {
	if a == nil {
		return
	}
	a.summaries[OutcomeOf(err)].Add(1)
	for k, n := range [nKinds]int64{input, output, cacheRead, cacheWrite} {
		if n > 0 {
			a.summaryToks[k].Add(n)
		}
	}
}

// Op is an operation on a conversation or an agent besides a turn.
type Op int

// The operations counted.
const (
	OpEnd      Op = iota // a running turn asked to end, which wrote its ended answer
	OpFork               // a conversation forked
	OpImport             // an agent's state taken in (ASP's PUT state)
	OpExport             // an agent's state taken out (ASP's GET state)
	OpHandOver           // an answer handed over at _link/recover
	nOps
)

var opNames = [nOps]string{"end", "fork", "import", "export", "hand_over"}

// Did counts one operation op.
func (a *Agent) Did(op Op) {
	if a != nil {
		a.ops[op].Add(1)
	}
}

// Ops returns how many of op were counted.
func (a *Agent) Ops(op Op) uint64 { return a.ops[op].Load() }

// Summaries returns how many summaries ended with outcome o.
func (a *Agent) Summaries(o Outcome) uint64 { return a.summaries[o].Load() }

// Turns returns how many turns ended with outcome o.
func (a *Agent) Turns(o Outcome) uint64 { return a.turns[o].Load() }

// BytesRead returns the event bytes the agent's turns read from the store.
func (a *Agent) BytesRead() int64 { return a.bytesRead.Load() }

// Provider returns the metrics of the agent's calls to provider, made on
// first use; nil for a nil Agent. After the first, it does not allocate.
func (a *Agent) Provider(name string) *Provider {
	if a == nil {
		return nil
	}
	return a.providers.get(name, func() *Provider { return &Provider{hist: a.Process.provider(name)} })
}

// Provider is an agent's calls to one provider. The zero value is ready to
// use; it is safe for concurrent use, and a nil *Provider counts nothing.
type Provider struct {
	calls     [nOutcomes]atomic.Uint64
	callNanos atomic.Int64
	tokens    [nKinds]atomic.Int64
	cost      atomic.Uint64         // float64 bits, US dollars
	hist      *[nOutcomes]Histogram // the process's, for the provider; nil: none
}

// Call counts a model call of d that ended with err.
func (p *Provider) Call(d time.Duration, err error) {
	if p == nil {
		return
	}
	o := OutcomeOf(err)
	p.calls[o].Add(1)
	p.callNanos.Add(int64(d))
	observe(p.hist, o, d)
}

// Used counts an answer's tokens and cost.
func (p *Provider) Used(input, output, cacheRead, cacheWrite int64, cost float64) {
	if p == nil {
		return
	}
	for k, n := range [nKinds]int64{input, output, cacheRead, cacheWrite} {
		if n > 0 {
			p.tokens[k].Add(n)
		}
	}
	if cost <= 0 {
		return
	}
	for {
		old := p.cost.Load()
		if p.cost.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+cost)) {
			return
		}
	}
}

// Write writes the process's histograms (none for a nil p) and the agents'
// counters, each family once with every agent's series in it, agents in
// name order.
func Write(w io.Writer, p *Process, agents []*Agent) {
	agents = append([]*Agent(nil), agents...)
	sort.Slice(agents, func(i, j int) bool { return agents[i].Name < agents[j].Name })
	if p != nil {
		byOutcome(w, "lnk_turn_seconds", "Time of a turn, from its lock to its answer, by outcome, the process's agents together.", &p.turns, "")
		family(w, "lnk_model_call_seconds", "histogram", "Time of a call to the model, by provider and outcome, the process's agents together.")
		if m := p.calls.known.Load(); m != nil {
			for _, name := range sortedKeys(*m) {
				for o := range nOutcomes {
					(*m)[name][o].write(w, "lnk_model_call_seconds", labels("provider", name, "outcome", outcomeNames[o]))
				}
			}
		}
		byOutcome(w, "lnk_tool_call_seconds", "Time of a tool call, by outcome, the process's agents together.", &p.tools, "")
		family(w, "lnk_store_fsync_seconds", "histogram", "Time of an fsync of a conversation's store, the process's agents together.")
		p.fsync.write(w, "lnk_store_fsync_seconds", "")
	}
	counters(w, agents, "lnk_turns_total", "Turns taken, by outcome.", "outcome", outcomeNames[:],
		func(a *Agent, o int) int64 { return int64(a.turns[o].Load()) })
	floats(w, agents, "lnk_turn_seconds_total", "Time of the agent's turns, from their lock to their answer, summed.",
		func(a *Agent) float64 { return float64(a.turnNanos.Load()) / 1e9 })
	providerCounters(w, agents, "lnk_model_calls_total", "Calls to the model, by provider and outcome.", "outcome", outcomeNames[:],
		func(p *Provider, o int) int64 { return int64(p.calls[o].Load()) })
	providerFloats(w, agents, "lnk_model_call_seconds_total", "Time of the agent's calls to the model, by provider, summed.",
		func(p *Provider) float64 { return float64(p.callNanos.Load()) / 1e9 })
	providerCounters(w, agents, "lnk_tokens_total", "Tokens the provider reported, by kind.", "kind", kindNames[:],
		func(p *Provider, k int) int64 { return p.tokens[k].Load() })
	providerFloats(w, agents, "lnk_cost_usd_total", "What the answers and summaries cost, in US dollars: what the provider reported it charged, else by the model facts' prices.",
		func(p *Provider) float64 { return math.Float64frombits(p.cost.Load()) })
	counters(w, agents, "lnk_summaries_total", "Summaries asked after an answer, by outcome: a refused or cut one is an error, and writes nothing.",
		"outcome", outcomeNames[:], func(a *Agent, o int) int64 { return int64(a.summaries[o].Load()) })
	counters(w, agents, "lnk_summary_tokens_total", "Tokens the provider reported for summaries, by kind; also in lnk_tokens_total.",
		"kind", kindNames[:], func(a *Agent, k int) int64 { return a.summaryToks[k].Load() })
	counters(w, agents, "lnk_tool_calls_total", "Tool calls, by outcome.", "outcome", outcomeNames[:],
		func(a *Agent, o int) int64 { return int64(a.tools[o].Load()) })
	counters(w, agents, "lnk_store_fsyncs_total", "Fsyncs of a conversation's store.", "", nil,
		func(a *Agent, _ int) int64 { return int64(a.fsyncs.Load()) })
	counters(w, agents, "lnk_store_bytes_read_total", "Bytes read from the store.", "", nil,
		func(a *Agent, _ int) int64 { return a.bytesRead.Load() })
	counters(w, agents, "lnk_operations_total", "Operations besides turns, by kind: end, fork, import, export, hand_over.",
		"kind", opNames[:], func(a *Agent, op int) int64 { return int64(a.ops[op].Load()) })
	counters(w, agents, "lnk_store_bytes_written_total", "Bytes written to the store and the copy.", "", nil,
		func(a *Agent, _ int) int64 { return a.bytesWritten.Load() })
}

// byOutcome writes a histogram family of a series for each outcome, with
// more labels (`a="x"`, or "") before the outcome.
func byOutcome(w io.Writer, name, help string, hs *[nOutcomes]Histogram, more string) {
	family(w, name, "histogram", help)
	for o := range nOutcomes {
		l := labels("outcome", outcomeNames[o])
		if more != "" {
			l = more + "," + l
		}
		hs[o].write(w, name, l)
	}
}

// counters writes a counter family of a series for each agent and each of
// values, the label key's values, value(a, i) counting for values[i]; with
// no key, one series for each agent, value(a, 0).
func counters(w io.Writer, agents []*Agent, name, help, key string, values []string, value func(a *Agent, i int) int64) {
	family(w, name, "counter", help)
	for _, a := range agents {
		if key == "" {
			fmt.Fprintf(w, "%s{%s} %d\n", name, labels("agent", a.Name), value(a, 0))
			continue
		}
		for i, v := range values {
			fmt.Fprintf(w, "%s{%s} %d\n", name, labels("agent", a.Name, key, v), value(a, i))
		}
	}
}

// floats writes a counter family of a series for each agent, value(a)
// its float value.
func floats(w io.Writer, agents []*Agent, name, help string, value func(a *Agent) float64) {
	family(w, name, "counter", help)
	for _, a := range agents {
		fmt.Fprintf(w, "%s{%s} %s\n", name, labels("agent", a.Name), strconv.FormatFloat(value(a), 'g', -1, 64))
	}
}

// providerCounters writes the counter family name of each agent's calls to
// each provider, a line for each of values under label.
func providerCounters(w io.Writer, agents []*Agent, name, help, label string, values []string, get func(p *Provider, i int) int64) {
	family(w, name, "counter", help)
	each(agents, func(a *Agent, provider string, p *Provider) {
		for i, v := range values {
			fmt.Fprintf(w, "%s{%s} %d\n", name, labels("agent", a.Name, "provider", provider, label, v), get(p, i))
		}
	})
}

// providerFloats writes the counter family name of each agent's calls to
// each provider, a line each.
func providerFloats(w io.Writer, agents []*Agent, name, help string, get func(p *Provider) float64) {
	family(w, name, "counter", help)
	each(agents, func(a *Agent, provider string, p *Provider) {
		fmt.Fprintf(w, "%s{%s} %s\n", name, labels("agent", a.Name, "provider", provider), strconv.FormatFloat(get(p), 'g', -1, 64))
	})
}

// each calls fn for each agent's providers, in name order.
func each(agents []*Agent, fn func(a *Agent, name string, p *Provider)) {
	for _, a := range agents {
		m := a.providers.known.Load()
		if m == nil {
			continue
		}
		for _, n := range sortedKeys(*m) {
			fn(a, n, (*m)[n])
		}
	}
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Refusals counts requests refused with a 4xx status, or 503 for a process
// with no room for their turn, by agent and status.
// The agent is "" when the request named none served here, so an unknown
// name never becomes a label. The zero value is ready to use; it is safe
// for concurrent use.
type Refusals struct {
	mu sync.Mutex
	// guarded by mu
	n map[refusal]int64
}

type refusal struct {
	agent  string
	status int
}

// Add counts one refusal.
func (r *Refusals) Add(agent string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = make(map[refusal]int64)
	}
	r.n[refusal{agent, status}]++
}

// Write writes lnk_refusals_total.
func (r *Refusals) Write(w io.Writer) {
	r.mu.Lock()
	keys := make([]refusal, 0, len(r.n))
	for k := range r.n {
		keys = append(keys, k)
	}
	counts := make([]int64, len(keys))
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].agent != keys[j].agent {
			return keys[i].agent < keys[j].agent
		}
		return keys[i].status < keys[j].status
	})
	for i, k := range keys {
		counts[i] = r.n[k]
	}
	r.mu.Unlock()
	family(w, "lnk_refusals_total", "counter", "Requests refused with a 4xx status, or 503 for a process with no room for their turn, by status.")
	for i, k := range keys {
		l := labels("status", strconv.Itoa(k.status))
		if k.agent != "" {
			l = labels("agent", k.agent, "status", strconv.Itoa(k.status))
		}
		fmt.Fprintf(w, "lnk_refusals_total{%s} %d\n", l, counts[i])
	}
}

// Gauge writes one gauge family of per-agent values.
func Gauge(w io.Writer, name, help string, agents []string, value func(agent string) int64) {
	family(w, name, "gauge", help)
	for _, a := range agents {
		fmt.Fprintf(w, "%s{%s} %d\n", name, labels("agent", a), value(a))
	}
}

func family(w io.Writer, name, kind, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
}

// labels writes name="value" pairs, values escaped as the text format
// says: backslash, double quote and line feed.
func labels(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(escaper.Replace(kv[i+1]))
		b.WriteByte('"')
	}
	return b.String()
}

var escaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func seconds(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'g', -1, 64) }

// byName is a map of what is made on a name's first use, read without a
// lock: a new name copies the map under mu, so once a name was used its
// lookup neither locks nor allocates. The zero value is ready to use.
type byName[V any] struct {
	mu    sync.Mutex
	known atomic.Pointer[map[string]V]
}

// get returns name's value, made by mk on the name's first use.
func (b *byName[V]) get(name string, mk func() V) V {
	if m := b.known.Load(); m != nil {
		if v, ok := (*m)[name]; ok {
			return v
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var old map[string]V
	if m := b.known.Load(); m != nil {
		old = *m
	}
	if v, ok := old[name]; ok {
		return v
	}
	next := make(map[string]V, len(old)+1)
	maps.Copy(next, old)
	v := mk()
	next[name] = v
	b.known.Store(&next)
	return v
}
