package measure

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"lnk.dev/linkharness/measure/profile"
)

// WriteTable writes r for people: a table per case, an agent a row and
// their median last, then the model's side and the largest bottleneck.
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

// writeCase writes one case: an agent a row, their median last, then the
// latency, the start and the model's side.
func (r *Result) writeCase(ew io.Writer, c *Case) {
	fmt.Fprintf(ew, "%s harness (%s): %s in %s, %s each after %d warm-up, in a conversation of %s\n",
		r.Harness, filepath.Base(r.Program), plural(c.Agents, "agent"), processes(*c),
		plural(r.Settings.Messages, "message"), r.Settings.Warmup, plural(c.Length, "event"))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tidle\t\t\t\tper message\t\t\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "agent\tRSS\tPSS\tanon\tCPU\tCPU\tadded\tp50\tp99\tturn\tallocs\talloc\tstore r/w\tio r/w\tdisk w\t")
	row := func(name string, a *AgentCost) {
		p := &a.PerMessage
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			name, bytesStr(a.Idle.RSS), bytesStr(a.Idle.PSS), bytesStr(a.Idle.Anon), percent(a.Idle.CPU),
			secs(p.CPU), secs(p.Added.Mean), secs(p.Added.P50), secs(p.Added.P99), secs(p.Turn),
			count(p.Allocs), bytesStr(p.AllocBytes),
			bytesStr(p.StoreRead)+" / "+bytesStr(p.StoreWritten),
			bytesStr(p.ReadChars)+" / "+bytesStr(p.WrittenChars),
			bytesStr(p.DiskWritten))
	}
	if len(c.PerAgent) <= 12 {
		for j := range c.PerAgent {
			row(c.PerAgent[j].Name, &c.PerAgent[j])
		}
	}
	row("median", &c.Median)
	tw.Flush()
	fmt.Fprintf(ew, "(added: the latency less the model's share; turn: the harness's own time; io: read and write calls of any kind)\n")
	fmt.Fprintf(ew, "latency p50 %s p99 %s; at start %s RSS, %s PSS; %.0f goroutines idle; model: %.2f requests per message, %s per request (largest %s)\n",
		secs(c.Median.PerMessage.Latency.P50), secs(c.Median.PerMessage.Latency.P99),
		bytesStr(c.Median.Start.RSS), bytesStr(c.Median.Start.PSS), c.Median.Idle.Goroutines,
		c.Model.Requests, bytesStr(c.Model.RequestBytes), bytesStr(c.Model.MaxBytes))
	if c.Errors > 0 {
		fmt.Fprintf(ew, "%d of %d messages not answered; the first: %s\n", c.Errors, c.Errors+c.Messages, c.FirstError)
	}
}

// writeMarginal writes what one more agent and one more message cost, per
// layout.
func (r *Result) writeMarginal(ew io.Writer) {
	fmt.Fprintf(ew, "\nwhat one more agent and one more message cost (conversations of %s):\n", plural(r.Cases[0].Length, "event"))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "layout\tagents\tidle RSS per agent\tPSS\tanon\tprocess RSS\tCPU per message\tmessages\t")
	for _, m := range r.Marginal {
		counts := make([]string, len(m.Agents))
		for i, n := range m.Agents {
			counts[i] = strconv.Itoa(n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", m.Layout, strings.Join(counts, ","),
			bytesStr(m.IdleMemoryPerAgent.RSS), bytesStr(m.IdleMemoryPerAgent.PSS), bytesStr(m.IdleMemoryPerAgent.Anon),
			bytesStr(m.IdleMemoryBase.RSS), secs(m.CPUPerMessage), m.Messages)
	}
	tw.Flush()
	fmt.Fprintln(ew, "(per agent: the slope of the processes' idle memory against the agents; process: the line at no agent)")
}

// writeProfile writes the largest bottleneck and the top functions.
func writeProfile(ew io.Writer, p *profile.Summary) {
	fmt.Fprintf(ew, "\nlargest bottleneck: %s (%s of %s CPU sampled in %d profiles)", p.Largest, percent(p.Flat[0].Share), secs(p.Seconds), p.Profiles)
	if p.Via != "" {
		fmt.Fprintf(ew, ", via %s", p.Via)
	}
	fmt.Fprintln(ew)
	if p.Samples < fewSamples {
		fmt.Fprintf(ew, "(from %d samples only, at 100 a CPU second: send more messages, e.g. --messages 1000, for a surer answer)\n", p.Samples)
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "flat\t\tcumulative\t")
	for i := range max(len(p.Flat), len(p.Cum)) {
		var f, c string
		if i < len(p.Flat) {
			f = percent(p.Flat[i].Share) + "\t" + p.Flat[i].Name
		} else {
			f = "\t"
		}
		if i < len(p.Cum) {
			c = percent(p.Cum[i].Share) + "  " + p.Cum[i].Name
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", f, c)
	}
	tw.Flush()
}

// processes says how a case's agents were served.
func processes(c Case) string {
	if c.Layout == Shared {
		return "one process (serve --agents)"
	}
	return plural(c.Processes, "process")
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

// plural says n things: "1 agent", "3 agents", "2 processes".
func plural(n int, thing string) string {
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
// agent holds and what a message costs.
func (r *Result) writePeers(w io.Writer) {
	fmt.Fprintf(w, "\nside by side, against the same scripted model (peers: %s each after one warm-up, idle %s after their program starts):\n",
		plural(r.Peers[0].Messages, "message"), secs(r.Peers[0].IdleSeconds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "harness\tversion\tidle RSS\tidle PSS\tCPU per message\tpeak RSS\tlatency p50\tmodel request\t")
	for _, m := range r.Marginal {
		if m.Layout != Shared {
			continue
		}
		fmt.Fprintf(tw, "%s, one more agent in one process\t\t%s\t%s\t%s\t\t\t\t\n", r.Harness,
			bytesStr(m.IdleMemoryPerAgent.RSS), bytesStr(m.IdleMemoryPerAgent.PSS), secs(m.CPUPerMessage))
	}
	if len(r.Cases) > 0 {
		c := r.Cases[0]
		fmt.Fprintf(tw, "%s, an agent alone\t\t%s\t%s\t%s\t\t%s\t%s\t\n", r.Harness,
			bytesStr(c.Median.Idle.RSS), bytesStr(c.Median.Idle.PSS), secs(c.Median.PerMessage.CPU), secs(c.Median.PerMessage.Latency.P50),
			bytesStr(c.Model.RequestBytes))
	}
	for _, p := range r.Peers {
		a := p.Case.Median
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Harness, p.Version,
			bytesStr(a.Idle.RSS), bytesStr(a.Idle.PSS), secs(a.PerMessage.CPU), bytesStr(a.PerMessage.PeakRSS), secs(a.PerMessage.Latency.P50),
			bytesStr(p.Case.Model.RequestBytes))
		if p.Case.Errors > 0 {
			fmt.Fprintf(tw, "  %d of %d not answered: %s\t\t\t\t\t\t\t\t\n", p.Case.Errors, p.Case.Errors+p.Case.Messages, p.Case.FirstError)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "(a peer's CPU is its command's and its descendants', per message; its idle memory is its interactive program's process tree)")
	for _, p := range r.Peers {
		if floor := p.Case.Median.PerMessage.CPU; p.Harness == "floor" && floor > 0 && len(r.Cases) > 0 {
			fmt.Fprintf(w, "%s, an agent alone: %.2f× the floor's CPU per message (bench/floor, the least a warm harness does)\n",
				r.Harness, r.Cases[0].Median.PerMessage.CPU/floor)
		}
	}
}
