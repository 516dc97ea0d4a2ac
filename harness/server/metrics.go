package server

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime/metrics"
	"sort"

	"github.com/prometheus/procfs"

	lnkmetrics "lnk.dev/linkharness/harness/metrics"
)

// metrics writes Prometheus text: each agent's turns, calls, tokens, cost,
// fsyncs and bytes (harness/metrics), the refusals, the answers waiting at
// _link/recover, and the process's allocations and goroutines.
func (s *Server) metrics(w http.ResponseWriter) {
	all := s.all()
	names := make([]string, 0, len(all))
	agents := make([]*lnkmetrics.Agent, 0, len(all))
	byName := make(map[string]*served, len(all))
	for _, a := range all {
		n := a.Runner.Agent.Name
		names = append(names, n)
		agents = append(agents, a.Runner.Metrics)
		byName[n] = a
	}
	sort.Strings(names)
	now := s.now()
	var b bytes.Buffer
	lnkmetrics.Write(&b, s.proc, agents)
	s.refusals.Write(&b)
	lnkmetrics.Gauge(&b, "lnk_recover_waiting", "Answers waiting at _link/recover for their bridge.", names, func(n string) int64 {
		a := byName[n]
		return a.wait.of(a.Runner.Agent, now)
	})
	gauge(&b, "lnk_turns_in_flight", "Turns running now, those whose caller left too.", int(s.Running()))
	if s.bound != nil {
		gauge(&b, "lnk_turns_max_in_flight", "The most turns the process lets run at once ([serve] max_turns).", int(s.bound.Max()))
	}
	if pr, err := readProcess(); err == nil {
		gauge(&b, "process_open_fds", "Open file descriptors.", pr.open)
		gauge(&b, "process_max_fds", "The most open file descriptors the process may have.", pr.max)
		gauge(&b, "process_resident_memory_bytes", "Resident memory.", pr.resident)
	}
	writeRuntime(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Write(b.Bytes())
}

// runtimeMetrics are the Go runtime's figures /metrics tells: its
// allocations and goroutines, and where its memory is. A process's growth
// under load is mostly what is live at a collection and its goroutines'
// stacks, each counted twice in what it holds at most: the collector lets
// the heap reach its goal, that plus as much again (GOGC=100).
var runtimeMetrics = []struct{ sample, name, kind, help string }{
	{"/gc/heap/allocs:objects", "go_heap_allocs_objects_total", "counter", "Heap objects allocated."},
	{"/gc/heap/allocs:bytes", "go_heap_allocs_bytes_total", "counter", "Heap bytes allocated."},
	{"/sched/goroutines:goroutines", "go_goroutines", "gauge", "Goroutines."},
	{"/gc/heap/live:bytes", "go_gc_heap_live_bytes", "gauge", "Heap bytes live at the last collection."},
	{"/gc/heap/goal:bytes", "go_gc_heap_goal_bytes", "gauge", "The heap's size at which the collector aims to end its cycle."},
	{"/memory/classes/heap/objects:bytes", "go_memory_heap_objects_bytes", "gauge", "Heap bytes in objects, live or not yet collected."},
	{"/memory/classes/heap/stacks:bytes", "go_memory_stacks_bytes", "gauge", "Bytes of goroutines' stacks."},
}

// writeRuntime writes runtimeMetrics to b.
func writeRuntime(b *bytes.Buffer) {
	samples := make([]metrics.Sample, len(runtimeMetrics))
	for i, m := range runtimeMetrics {
		samples[i].Name = m.sample
	}
	metrics.Read(samples)
	for i, m := range runtimeMetrics {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", m.name, m.help, m.name, m.kind, m.name, samples[i].Value.Uint64())
	}
}

// process is what /metrics tells of the process from /proc, as
// Prometheus's process collector names it: its descriptors open, their
// limit, and its resident memory.
type process struct{ open, max, resident int }

// readProcess reads process from /proc/self.
func readProcess() (process, error) {
	p, err := procfs.Self()
	if err != nil {
		return process{}, err
	}
	open, err := p.FileDescriptorsLen()
	if err != nil {
		return process{}, err
	}
	lim, err := p.Limits()
	if err != nil {
		return process{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return process{}, err
	}
	return process{open: open, max: int(lim.OpenFiles), resident: st.ResidentMemory()}, nil
}

// gauge writes a gauge of no labels to b.
func gauge(b *bytes.Buffer, name, help string, v int) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
}
