package measure

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// WriteReport writes into dir (made if missing) the result as result.json,
// the table as result.txt, and the plots as SVG files:
// cost-per-message.svg (CPU and time the harness adds per message against
// the conversation's length, with the fewest agents) and idle-memory.svg
// (an idle agent's RSS and PSS against the count of agents, with the
// shortest conversation). A plot needs two cases to draw a line; with one
// it draws the point.
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
	for _, p := range r.plots() {
		if err := write(p.file, func(f *os.File) error { return p.plot.WriteSVG(f) }); err != nil {
			return err
		}
	}
	return nil
}

type namedPlot struct {
	file string
	plot Plot
}

// plots makes the report's plots from the cases.
func (r *Result) plots() []namedPlot {
	byLength, byAgents := r.series()
	perMsg := Plot{
		Title:  "Cost per message against the conversation's length",
		XLabel: "events in the conversation before the message",
		YLabel: "milliseconds per message",
	}
	cpu := PlotSeries{Name: "CPU"}
	p50 := PlotSeries{Name: "added, p50"}
	p99 := PlotSeries{Name: "added, p99"}
	for _, c := range byLength {
		perMsg.X = append(perMsg.X, strconv.Itoa(c.Length))
		m := &c.Median.PerMessage
		cpu.Y = append(cpu.Y, m.CPU*1e3)
		p50.Y = append(p50.Y, m.Added.P50*1e3)
		p99.Y = append(p99.Y, m.Added.P99*1e3)
	}
	perMsg.Series = []PlotSeries{cpu, p50, p99}

	idle := Plot{
		Title:  "An idle agent's memory against the count of agents",
		XLabel: "agents, one process each",
		YLabel: "MB per agent",
	}
	rss := PlotSeries{Name: "RSS"}
	pss := PlotSeries{Name: "PSS"}
	for _, c := range byAgents {
		idle.X = append(idle.X, strconv.Itoa(c.Agents))
		rss.Y = append(rss.Y, c.Median.Idle.RSS/1e6)
		pss.Y = append(pss.Y, c.Median.Idle.PSS/1e6)
	}
	idle.Series = []PlotSeries{rss, pss}
	return []namedPlot{{"cost-per-message.svg", perMsg}, {"idle-memory.svg", idle}}
}

// series returns the cases with the fewest agents, by length, and the
// cases with the shortest conversation, by count of agents: plan's two
// sweeps.
func (r *Result) series() (byLength, byAgents []Case) {
	minLen, minAgents := math.MaxInt, math.MaxInt
	for _, c := range r.Cases {
		minLen = min(minLen, c.Length)
		minAgents = min(minAgents, c.Agents)
	}
	for _, c := range r.Cases {
		if c.Agents == minAgents {
			byLength = append(byLength, c)
		}
		if c.Length == minLen {
			byAgents = append(byAgents, c)
		}
	}
	sort.SliceStable(byLength, func(i, j int) bool { return byLength[i].Length < byLength[j].Length })
	sort.SliceStable(byAgents, func(i, j int) bool { return byAgents[i].Agents < byAgents[j].Agents })
	return byLength, byAgents
}
