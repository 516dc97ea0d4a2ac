package measure

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/measure/report"
)

// TestAgreesWithProcfs runs a measurement of the real harness, one agent
// and n in one process, and counts the same processes itself at the same
// moments from other files of /proc: resident pages from statm (Run reads
// smaps_rollup) and the CPU time of every thread from task/*/schedstat
// (Run reads the process's CPU-time clock). The per-agent slope of idle
// memory (fresh and after work), an agent's idle memory alone and the CPU
// per message must agree within 10%. It runs in CI with 20 agents;
// LNK_MEASURE_AGREE_AGENTS sets another count (BENCHMARKS.md has 1,000).
func TestAgreesWithProcfs(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds and runs the harness")
	}
	n := 20
	if s := os.Getenv("LNK_MEASURE_AGREE_AGENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 || n > maxAgents {
			t.Fatalf("LNK_MEASURE_AGREE_AGENTS=%q: want a count of 2 to %d", s, maxAgents)
		}
	}
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/schedstat"); err != nil {
		t.Skip("no schedstat in /proc to count CPU time by:", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	program := harnessProgram(ctx, t)
	type key struct {
		c     int
		phase Phase
	}
	var mu sync.Mutex
	own := map[key]ownCount{}
	var failed []string
	res, err := Run(ctx, Config{
		Program: program,
		Agents:  []int{1, n},
		Layouts: []report.Layout{report.Shared},
		Idle:    time.Second,
		Observe: func(o Observation) {
			c, err := countProc(o.PID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err.Error())
			}
			own[key{o.Case, o.Phase}] = c
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	if len(res.Cases) != 2 || len(res.Marginal) != 1 {
		t.Fatalf("%d cases, %d marginals; want 2, 1", len(res.Cases), len(res.Marginal))
	}
	for i, c := range res.Cases {
		if want := max(1, ceilDiv(MinMessages, c.Agents)) * c.Agents; c.Messages != want || c.Errors != 0 {
			t.Fatalf("case %d: %d messages answered, %d not (%s); want %d", i, c.Messages, c.Errors, c.FirstError, want)
		}
	}
	m := res.Marginal[0]
	slope := func(p Phase) float64 {
		return (own[key{1, p}].rss - own[key{0, p}].rss) / float64(n-1)
	}
	cpu := func(i int) float64 {
		return (own[key{i, PhaseSpanEnd}].cpu - own[key{i, PhaseSpanStart}].cpu) / float64(res.Cases[i].Messages)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-40s %14s %14s %8s\n", "figure", "lnk measure", "procfs", "ratio")
	// Two reads of a process a moment apart may differ by a page or two,
	// which a slope divides among the agents: a slope near 0 agrees within
	// that too. A fresh process has not settled (no collection can be
	// asked before a message, and the runtime's background work still
	// faults pages in and gives them back): on a loaded machine its two
	// reads were seen 7 pages apart, so it is given 8.
	page := 2 * float64(os.Getpagesize()) / float64(n-1)
	freshPages := 8 * float64(os.Getpagesize()) / float64(n-1)
	// A slope may be 0: twenty agents that have sent nothing can fit in
	// pages the process had already. An agent's memory or a message's CPU
	// read as 0 is a count gone wrong.
	for _, f := range []struct {
		name          string
		measure, proc float64
		slack         float64
		slope         bool
	}{
		{fmt.Sprintf("RSS per extra agent, fresh (1 to %d)", n), m.FreshMemoryPerAgent.RSS, slope(PhaseFresh), freshPages, true},
		{"RSS per extra agent, after 1 message", m.IdleMemoryPerAgent.RSS, slope(PhaseWorked), page, true},
		{"idle RSS, one agent", res.Cases[0].Median.Idle.RSS, own[key{0, PhaseWorked}].rss, 0, false},
		{"CPU per message, one agent (s)", res.Cases[0].Total.CPUPerMessage, cpu(0), 0, false},
		{fmt.Sprintf("CPU per message, %d agents (s)", n), res.Cases[1].Total.CPUPerMessage, cpu(1), 0, false},
	} {
		r := f.measure / f.proc
		fmt.Fprintf(&table, "%-40s %14.6g %14.6g %8.3f\n", f.name, f.measure, f.proc, r)
		if (!f.slope && (f.proc == 0 || math.IsNaN(r))) || math.Abs(f.measure-f.proc) > max(0.10*math.Abs(f.proc), f.slack) {
			t.Errorf("%s: lnk measure %g, procfs %g: not within 10%%", f.name, f.measure, f.proc)
		}
	}
	t.Logf("\n%s", table.String())
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(b.String(), "\n") {
		if w := len([]rune(l)); w > report.Width {
			t.Errorf("line %d of the table is %d columns wide: %q", i+1, w, l)
		}
	}
	t.Logf("\n%s", b.String())
}

// harnessProgram is the harness a long measurement runs:
// LNK_MEASURE_HARNESS, or else the one built from this tree.
func harnessProgram(ctx context.Context, t *testing.T) string {
	t.Helper()
	if program := os.Getenv("LNK_MEASURE_HARNESS"); program != "" {
		return program
	}
	program, err := drive.BuildHarness(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return program
}

// ownCount is what the test reads of a process itself: resident bytes
// and the CPU time of its threads, in seconds.
type ownCount struct {
	rss, cpu float64
}

// countProc reads /proc/PID/statm's resident pages and sums the first
// field of every thread's schedstat (nanoseconds on a CPU).
func countProc(pid int) (ownCount, error) {
	var c ownCount
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return c, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return c, fmt.Errorf("statm of %d: %q", pid, b)
	}
	pages, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		return c, err
	}
	c.rss = pages * float64(os.Getpagesize())
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return c, fmt.Errorf("no threads of %d: %v", pid, err)
	}
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return c, fmt.Errorf("%s: %q", path, b)
		}
		ns, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
		c.cpu += ns / 1e9
	}
	return c, nil
}
