package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"lnk.dev/linkharness/loadgen/profile"
)

// WriteTable writes r for people, at most 100 columns wide: a table per
// case, an agent a row and their median last; what one more agent and one
// more message cost; the peers side by side; and the largest bottleneck
// when profiled. Each table's columns are told in a line each beneath it.
// Sizes are in decimal units (1 kB = 1000 bytes).
func (r *Result) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	for i := range r.Cases {
		if i > 0 {
			fmt.Fprintln(ew)
		}
		r.writeCase(ew, &r.Cases[i])
	}
	if len(r.Marginal) > 0 {
		r.writeMarginal(ew)
	}
	if len(r.Peers) > 0 {
		r.writePeers(ew)
	}
	if p := r.Profile; p != nil && len(p.Flat) > 0 {
		writeProfile(ew, p)
	}
	return ew.err
}

// Width is the widest line WriteTable writes.
const Width = 100

// writeCase writes one case: an agent a row, their median last, then the
// rest of a message's cost, the model's side and, when its agents sleep,
// the process asleep.
func (r *Result) writeCase(ew io.Writer, c *Case) {
	writeWrapped(ew, fmt.Sprintf("%s (%s): %s in %s, %s each after %s, in a conversation of %s",
		r.Harness, filepath.Base(r.Program), Plural(c.Agents, "agent"), processes(*c),
		Plural(c.MessagesPerAgent, "message"), Plural(c.Warmup, "warm-up message"), Plural(c.Length, "event")), "")
	tw := newTable(ew)
	fmt.Fprintln(tw, "agent\tfresh RSS\tidle RSS\tidle PSS\tidle CPU\tCPU/msg\tadded p50\tadded p99\tturn\tallocs")
	row := func(name string, a *AgentCost) {
		p := &a.PerMessage
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			clip(name, 12), bytesStr(a.Start.RSS), bytesStr(a.Idle.RSS), bytesStr(a.Idle.PSS), percent(a.Idle.CPU),
			secs(p.CPU), secs(p.Added.P50), secs(p.Added.P99), secs(p.Turn), count(p.Allocs))
	}
	if len(c.PerAgent) <= 12 {
		for j := range c.PerAgent {
			row(c.PerAgent[j].Name, &c.PerAgent[j])
		}
	}
	row("median", &c.Median)
	tw.Flush()
	share := ""
	if c.Processes < c.Agents {
		share = " (an agent's share)"
	}
	writeLegend(ew,
		"fresh RSS: resident memory once listening, before any message"+share,
		"idle RSS, PSS: resident, proportional memory after the warm-up, once collected"+share,
		"idle CPU: CPU time per second over the quiet window after it"+share,
		"CPU/msg: the process's CPU clock over the measured messages, divided by them",
		"added p50, p99: the caller's wait less the model's share (lnk_model_call_seconds)",
		"turn: the harness's own time for a turn (lnk_turn_seconds); allocs: heap objects a message",
	)
	m := &c.Median.PerMessage
	writeWrapped(ew, fmt.Sprintf("per message: latency p50 %s, p99 %s; store read %s, written %s; read calls %s, write calls %s; "+
		"disk written %s; heap %s; model %.2f requests of %s (largest %s); %.0f goroutines idle",
		secs(m.Latency.P50), secs(m.Latency.P99), bytesStr(m.StoreRead), bytesStr(m.StoreWritten),
		bytesStr(m.ReadChars), bytesStr(m.WrittenChars), bytesStr(m.DiskWritten), bytesStr(m.AllocBytes),
		c.Model.Requests, bytesStr(c.Model.RequestBytes), bytesStr(c.Model.MaxBytes), c.Median.Idle.Goroutines), "")
	if a := c.Asleep; a != nil {
		writeWrapped(ew, fmt.Sprintf("every agent asleep, the process(es) after a collection: %s RSS before any message, "+
			"%s after the warm-up; CPU %s over %s asleep; %d of %d answered a message once all slept",
			bytesStr(a.Fresh.RSS), bytesStr(a.Worked.RSS), percent(a.CPU), secs(a.WindowSeconds), a.Woken, a.Woken+a.WakeErrors), "")
		if a.WakeErrors > 0 {
			writeWrapped(ew, "the first not answered: "+a.FirstWakeErr, "  ")
		}
	}
	if c.Errors > 0 {
		writeWrapped(ew, fmt.Sprintf("%d of %d messages not answered; the first: %s", c.Errors, c.Errors+c.Messages, c.FirstError), "")
	}
}

// writeMarginal writes what one more agent costs, per layout and state,
// and what one more message costs.
func (r *Result) writeMarginal(ew io.Writer) {
	fmt.Fprintf(ew, "\nwhat one more agent costs (conversations of %s):\n", Plural(r.Cases[0].Length, "event"))
	tw := newTable(ew)
	fmt.Fprintln(tw, "layout\tagents\tstate\tRSS/agent\tPSS/agent\tanon/agent\tprocess RSS")
	for _, m := range r.Marginal {
		counts := make([]string, len(m.Agents))
		for i, n := range m.Agents {
			counts[i] = strconv.Itoa(n)
		}
		ag := clip(strings.Join(counts, ","), 14)
		row := func(state string, per Memory, base string) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Layout, ag, state,
				bytesStr(per.RSS), bytesStr(per.PSS), bytesStr(per.Anon), base)
		}
		// With one count of agents there is no line, only memory over
		// agents: no process of its own to tell.
		base := func(b Memory) string {
			if distinct(m.Agents) < 2 {
				return "one count: none"
			}
			return bytesStr(b.RSS)
		}
		row("awake, fresh", m.FreshMemoryPerAgent, base(m.FreshMemoryBase))
		row("awake, after "+Plural(m.Warmup, "message"), m.IdleMemoryPerAgent, base(m.IdleMemoryBase))
		if m.AsleepFreshPerAgent != nil {
			row("asleep, fresh", *m.AsleepFreshPerAgent, "")
			row("asleep, after "+Plural(m.Warmup, "message"), *m.AsleepWorkedPerAgent, "")
		}
	}
	tw.Flush()
	writeLegend(ew,
		"RSS, PSS, anon/agent: the slope of the processes' memory against the count of agents",
		"process RSS: that line at no agent, the process itself (none from one count of agents)",
		"awake, fresh: every agent listening, before any message (no collection can be asked then)",
		"awake, after: each agent answered the warm-up, and the process collected (--idle-free)",
		"asleep: every agent asleep ([serve] sleep_after), once the process said it gave memory back",
	)
	for _, m := range r.Marginal {
		s := fmt.Sprintf("%s: one more message %s CPU (over %s); idle CPU awake %s", m.Layout, secs(m.CPUPerMessage),
			Plural(m.Messages, "message"), cpuAt(m.Agents, m.IdleCPU))
		if len(m.AsleepCPU) > 0 {
			s += ", asleep " + cpuAt(m.Agents, m.AsleepCPU)
		}
		if f := floorOf(r); f != nil {
			// An idle Go server that holds nothing: the runtime's own.
			s += fmt.Sprintf("; the floor idle %s over %s", percent(f.Case.Total.IdleCPU), secs(f.IdleSeconds))
		}
		writeWrapped(ew, s, "")
	}
}

// floorOf is the floor's result in r, if it ran.
func floorOf(r *Result) *PeerResult {
	for i := range r.Peers {
		if p := &r.Peers[i]; p.Harness == "floor" && p.NotRun == "" {
			return p
		}
	}
	return nil
}

// orNone formats x, or nothing for a figure not sampled (0).
func orNone(x float64, format func(float64) string) string {
	if x == 0 {
		return ""
	}
	return format(x)
}

// cpuAt says CPU per second at each count of agents: "0.001% at 1, 0.003% at 1000".
func cpuAt(agents []int, cpu []float64) string {
	var parts []string
	for i, c := range cpu {
		if i < len(agents) {
			parts = append(parts, percent(c)+" at "+strconv.Itoa(agents[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// writeProfile writes the largest bottleneck and the top functions.
func writeProfile(ew io.Writer, p *profile.Summary) {
	fmt.Fprintln(ew)
	s := fmt.Sprintf("largest bottleneck: %s (%s of %s CPU sampled in %d profiles)", p.Largest, percent(p.Flat[0].Share), secs(p.Seconds), p.Profiles)
	if p.Via != "" {
		s += ", via " + p.Via
	}
	writeWrapped(ew, s, "")
	if p.Samples < fewSamples {
		writeWrapped(ew, fmt.Sprintf("(from %d samples only, at 100 a CPU second: send more messages, e.g. --messages 1000, for a surer answer)", p.Samples), "")
	}
	fmt.Fprintln(ew, "flat:")
	for _, f := range p.Flat {
		fmt.Fprintf(ew, "  %6s  %s\n", percent(f.Share), clip(f.Name, Width-10))
	}
	fmt.Fprintln(ew, "cumulative:")
	for _, f := range p.Cum {
		fmt.Fprintf(ew, "  %6s  %s\n", percent(f.Share), clip(f.Name, Width-10))
	}
}

// writeLegend writes the lines that tell a table's columns, indented
// beneath it.
func writeLegend(w io.Writer, lines ...string) {
	for _, l := range lines {
		fmt.Fprintln(w, "  "+l)
	}
}

// table is a tabwriter whose lines lose their trailing spaces (a row's
// empty last cells).
type table struct {
	*tabwriter.Writer
	buf bytes.Buffer
	w   io.Writer
}

func newTable(w io.Writer) *table {
	t := &table{w: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// Flush writes the table.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(t.buf.String(), "\n") {
		if l == "" {
			continue
		}
		if _, err := io.WriteString(t.w, strings.TrimRight(l, " \n")+"\n"); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}

// writeWrapped writes s in lines of at most Width, breaking at spaces;
// lines after the first start with indent (and two spaces more).
func writeWrapped(w io.Writer, s, indent string) {
	prefix := indent
	for s != "" {
		room := Width - utf8.RuneCountInString(prefix)
		if utf8.RuneCountInString(s) <= room {
			fmt.Fprintln(w, prefix+s)
			return
		}
		cut := byteIndex(s, room)
		if i := strings.LastIndexByte(s[:cut], ' '); i > 0 {
			cut = i
		}
		fmt.Fprintln(w, prefix+strings.TrimRight(s[:cut], " "))
		s = strings.TrimLeft(s[cut:], " ")
		prefix = indent + "  "
	}
}

// byteIndex is the byte offset of s's nth rune, or len(s).
func byteIndex(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// clip shortens s to n runes, its end replaced by "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// processes says how a case's agents were served.
func processes(c Case) string {
	if c.Layout == Shared {
		return "one process (serve --agents)"
	}
	return Plural(c.Processes, "process")
}

// fewSamples is how many profile samples make a bottleneck worth naming
// without a warning.
const fewSamples = 200

// errWriter keeps the first write error, so a table's many writes are
// checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// secs formats seconds in the unit that suits them.
func secs(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 1e-3:
		return strconv.FormatFloat(s*1e6, 'f', 0, 64) + " µs"
	case s < 1:
		return strconv.FormatFloat(s*1e3, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'f', 2, 64) + " s"
}

// bytesStr formats a size in decimal units.
func bytesStr(b float64) string {
	if b < 0 {
		return "-" + bytesStr(-b)
	}
	switch {
	case b < 1e3:
		return strconv.FormatFloat(b, 'f', 0, 64) + " B"
	case b < 1e6:
		return strconv.FormatFloat(b/1e3, 'f', 1, 64) + " kB"
	case b < 1e9:
		return strconv.FormatFloat(b/1e6, 'f', 1, 64) + " MB"
	}
	return strconv.FormatFloat(b/1e9, 'f', 2, 64) + " GB"
}

func percent(f float64) string {
	if f != 0 && f < 0.001 {
		return strconv.FormatFloat(f*100, 'f', 3, 64) + "%"
	}
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

// Plural says n things: "1 agent", "3 agents", "2 processes".
func Plural(n int, thing string) string {
	s := strconv.Itoa(n) + " " + thing
	switch {
	case n == 1:
		return s
	case strings.HasSuffix(thing, "s"):
		return s + "es"
	}
	return s + "s"
}

func count(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// writePeers writes Link Harness and the peers side by side: what an idle
// agent holds and what a message costs; a peer that did not run, why.
func (r *Result) writePeers(w io.Writer) {
	var ran *PeerResult
	for i := range r.Peers {
		if r.Peers[i].NotRun == "" {
			ran = &r.Peers[i]
			break
		}
	}
	fmt.Fprintln(w)
	if ran != nil {
		writeWrapped(w, fmt.Sprintf("side by side, against the same scripted model (peers: %s each after one warm-up, idle %s after their program starts):",
			Plural(ran.Messages, "message"), secs(ran.IdleSeconds)), "")
	} else {
		fmt.Fprintln(w, "side by side, against the same scripted model:")
	}
	floor := 0.0
	for _, p := range r.Peers {
		if p.Harness == "floor" && p.NotRun == "" {
			floor = p.Case.Median.PerMessage.CPU
		}
	}
	ratio := func(cpu float64) string {
		if floor <= 0 || cpu <= 0 {
			return ""
		}
		return strconv.FormatFloat(cpu/floor, 'f', 2, 64) + "×"
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "harness\tversion\tidle RSS\tidle PSS\tCPU/msg\tfloor\tpeak RSS\tp50\trequest")
	for _, m := range r.Marginal {
		if m.Layout != Shared {
			continue
		}
		fmt.Fprintf(tw, "%s +1 shared\t\t%s\t%s\t%s\t%s\t\t\t\n", r.Harness,
			bytesStr(m.IdleMemoryPerAgent.RSS), bytesStr(m.IdleMemoryPerAgent.PSS), secs(m.CPUPerMessage), ratio(m.CPUPerMessage))
	}
	if len(r.Cases) > 0 {
		c := r.Cases[0]
		fmt.Fprintf(tw, "%s alone\t\t%s\t%s\t%s\t%s\t\t%s\t%s\n", r.Harness,
			bytesStr(c.Median.Idle.RSS), bytesStr(c.Median.Idle.PSS), secs(c.Median.PerMessage.CPU), ratio(c.Median.PerMessage.CPU),
			secs(c.Median.PerMessage.Latency.P50), bytesStr(c.Model.RequestBytes))
	}
	for _, p := range r.Peers {
		if p.NotRun != "" {
			fmt.Fprintf(tw, "%s\tnot run\t\t\t\t\t\t\t\n", clip(p.Harness, 16))
			continue
		}
		a := p.Case.Median
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clip(p.Harness, 16), clip(p.Version, 10),
			bytesStr(a.Idle.RSS), bytesStr(a.Idle.PSS), secs(a.PerMessage.CPU), ratio(a.PerMessage.CPU),
			orNone(a.PerMessage.PeakRSS, bytesStr), secs(a.PerMessage.Latency.P50), bytesStr(p.Case.Model.RequestBytes))
	}
	tw.Flush()
	writeLegend(w,
		"+1 shared: one more agent in one process (the slopes above); alone: one agent, its process",
		"idle RSS, PSS: a peer's interactive program's process tree, settled",
		"CPU/msg: a peer's command's, its descendants' included; floor: as a multiple of the floor's",
		"peak RSS: the largest command's; p50: the caller's wait; request: the model request's mean body",
	)
	for _, p := range r.Peers {
		switch {
		case p.NotRun != "":
			writeWrapped(w, p.Harness+": not run: "+p.NotRun, "")
		case p.Case.Errors > 0:
			writeWrapped(w, fmt.Sprintf("%s: %d of %d not answered: %s", p.Harness, p.Case.Errors, p.Case.Errors+p.Case.Messages, p.Case.FirstError), "")
		}
	}
}

// distinct counts the different numbers in ns.
func distinct(ns []int) int {
	seen := map[int]bool{}
	for _, n := range ns {
		seen[n] = true
	}
	return len(seen)
}
