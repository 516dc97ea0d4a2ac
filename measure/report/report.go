package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"lnk.dev/linkharness/measure/plot"
)

// WriteReport writes into dir (made if missing) report.md, the result
// for people in Markdown with its plots; the plots as SVG files:
// cost-by-agents.svg (the processes' memory against the count of agents,
// awake and asleep, fresh and after work) and cost-by-window.svg (CPU and
// the time the harness adds per message against the conversation's
// length); the result as result.json; and the table as result.txt. A plot
// needs two cases to draw a line; with one it draws the point.
func (r *Result) WriteReport(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("measure: report: %w", err)
	}
	write := func(name string, fn func(f *os.File) error) error {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("measure: report: %w", err)
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("measure: report %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("measure: report %s: %w", path, err)
		}
		return nil
	}
	if err := write("result.json", func(f *os.File) error { return r.WriteJSON(f) }); err != nil {
		return err
	}
	if err := write("result.txt", func(f *os.File) error { return r.WriteTable(f) }); err != nil {
		return err
	}
	plots := r.plots()
	for _, p := range plots {
		if err := write(p.file, func(f *os.File) error { return p.fig.WriteSVG(f) }); err != nil {
			return err
		}
	}
	return write("report.md", func(f *os.File) error { return r.writeMarkdown(f, plots) })
}

// writeMarkdown writes the report: how the run was made, the plots, and
// the table.
func (r *Result) writeMarkdown(w io.Writer, plots []namedPlot) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# What each agent costs: %s\n\n", r.Harness)
	fmt.Fprintf(ew, "Measured %s on %d CPUs (%s/%s, kernel %s) in %.0f s, against the scripted model on loopback",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Machine.CPUs, r.Machine.OS, r.Machine.Arch, r.Machine.Kernel, r.Seconds)
	if r.Command != "" {
		fmt.Fprintf(ew, ", by\n\n```sh\n%s\n```\n\n", r.Command)
	} else {
		fmt.Fprint(ew, ".\n\n")
	}
	if r.Settings.Profiled {
		fmt.Fprint(ew, "The processes ran with the CPU profiler on: its memory and CPU count in the idle figures.\n\n")
	}
	for _, p := range plots {
		fmt.Fprintf(ew, "![%s](%s)\n\n", p.fig.Title, p.file)
	}
	fmt.Fprint(ew, "## Figures\n\n```text\n")
	if err := r.WriteTable(ew); err != nil {
		return err
	}
	fmt.Fprint(ew, "```\n\nThe whole result, every agent's figures included, is `result.json` beside this file.\n")
	return ew.err
}

type namedPlot struct {
	file string
	fig  plot.Plot
}

// plots makes the report's plots from the cases.
func (r *Result) plots() []namedPlot {
	byLength, byAgents := r.series()
	perMsg := plot.Plot{
		Title:  "Cost per message against the window",
		XLabel: "events in the conversation before the message",
		YLabel: "milliseconds per message",
	}
	cpu := plot.Series{Name: "CPU"}
	p50 := plot.Series{Name: "added, p50"}
	p99 := plot.Series{Name: "added, p99"}
	for _, c := range byLength {
		perMsg.X = append(perMsg.X, strconv.Itoa(c.Length))
		m := &c.Median.PerMessage
		cpu.Y = append(cpu.Y, m.CPU*1e3)
		p50.Y = append(p50.Y, m.Added.P50*1e3)
		p99.Y = append(p99.Y, m.Added.P99*1e3)
	}
	perMsg.Series = []plot.Series{cpu, p50, p99}

	layout := "a process each"
	if len(byAgents) > 0 && byAgents[len(byAgents)-1].Layout == Shared {
		layout = "one process"
	}
	mem := plot.Plot{
		Title:  "Resident memory against the count of agents",
		XLabel: "agents, " + layout,
		YLabel: "MB, every process summed",
	}
	fresh := plot.Series{Name: "awake, fresh"}
	worked := plot.Series{Name: "awake, after work"}
	asleepFresh := plot.Series{Name: "asleep, fresh"}
	asleepWorked := plot.Series{Name: "asleep, after work"}
	asleep := false
	for _, c := range byAgents {
		mem.X = append(mem.X, strconv.Itoa(c.Agents))
		fresh.Y = append(fresh.Y, c.Total.StartMemory.RSS/1e6)
		worked.Y = append(worked.Y, c.Total.IdleMemory.RSS/1e6)
		if a := c.Asleep; a != nil {
			asleep = true
			asleepFresh.Y = append(asleepFresh.Y, a.Fresh.RSS/1e6)
			asleepWorked.Y = append(asleepWorked.Y, a.Worked.RSS/1e6)
		} else {
			asleepFresh.Y = append(asleepFresh.Y, math.NaN())
			asleepWorked.Y = append(asleepWorked.Y, math.NaN())
		}
	}
	mem.Series = []plot.Series{fresh, worked}
	if asleep {
		mem.Series = append(mem.Series, asleepFresh, asleepWorked)
	}
	return []namedPlot{{"cost-by-agents.svg", mem}, {"cost-by-window.svg", perMsg}}
}

// series returns the cases with the fewest agents, by length, and the
// cases with the shortest conversation in the last layout (one agent in
// any, when the layout has none of its own), by count of agents: plan's
// two sweeps.
func (r *Result) series() (byLength, byAgents []Case) {
	minLen, minAgents := math.MaxInt, math.MaxInt
	for _, c := range r.Cases {
		minLen = min(minLen, c.Length)
		minAgents = min(minAgents, c.Agents)
	}
	layout := Each
	if ls := r.Settings.Layouts; len(ls) > 0 {
		layout = ls[len(ls)-1]
	}
	seen := map[int]bool{}
	for _, c := range r.Cases {
		if c.Agents == minAgents && c.Layout == r.Cases[0].Layout {
			byLength = append(byLength, c)
		}
	}
	for _, want := range []bool{true, false} {
		for _, c := range r.Cases {
			if c.Length == minLen && (c.Layout == layout) == want && !seen[c.Agents] && (want || c.Agents == 1) {
				seen[c.Agents] = true
				byAgents = append(byAgents, c)
			}
		}
	}
	sort.SliceStable(byLength, func(i, j int) bool { return byLength[i].Length < byLength[j].Length })
	sort.SliceStable(byAgents, func(i, j int) bool { return byAgents[i].Agents < byAgents[j].Agents })
	return byLength, byAgents
}
