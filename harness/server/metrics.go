package server

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime/metrics"
	"sort"

	"github.com/prometheus/procfs"

	"lnk.dev/linkharness/harness/home"
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
	var b bytes.Buffer
	lnkmetrics.Write(&b, s.proc, agents)
	s.refusals.Write(&b)
	lnkmetrics.Gauge(&b, "lnk_recover_waiting", "Answers waiting at _link/recover for their bridge.", names, func(n string) int64 {
		return waiting(byName[n].Runner.Agent)
	})
	fmt.Fprintf(&b, "# HELP lnk_turns_in_flight Turns running now, those whose caller left too.\n# TYPE lnk_turns_in_flight gauge\nlnk_turns_in_flight %d\n", s.Running())
	if s.bound != nil {
		fmt.Fprintf(&b, "# HELP lnk_turns_max_in_flight The most turns the process lets run at once ([serve] max_turns).\n# TYPE lnk_turns_max_in_flight gauge\nlnk_turns_max_in_flight %d\n", s.bound.Max())
	}
	if open, max, err := descriptors(); err == nil {
		fmt.Fprintf(&b, "# HELP process_open_fds Open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds %d\n", open)
		fmt.Fprintf(&b, "# HELP process_max_fds The most open file descriptors the process may have.\n# TYPE process_max_fds gauge\nprocess_max_fds %d\n", max)
	}
	if rss, err := resident(); err == nil {
		fmt.Fprintf(&b, "# HELP process_resident_memory_bytes Resident memory.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", rss)
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

// resident is the process's resident memory, in bytes.
func resident() (int, error) {
	p, err := procfs.Self()
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.ResidentMemory(), nil
}

// waiting counts the agent's answers waiting at _link/recover: the files
// recover would hand over.
func waiting(a home.Agent) int64 {
	chats, err := a.Path(home.Chats, "")
	if err != nil {
		return 0
	}
	files, _ := filepath.Glob(filepath.Join(chats, "*", "pending", "*.json"))
	return int64(len(files))
}

// descriptors is how many descriptors the process has open, and its
// limit, as Prometheus's process collector names them.
func descriptors() (open, max int, err error) {
	p, err := procfs.Self()
	if err != nil {
		return 0, 0, err
	}
	if open, err = p.FileDescriptorsLen(); err != nil {
		return 0, 0, err
	}
	lim, err := p.Limits()
	if err != nil {
		return 0, 0, err
	}
	return open, int(lim.OpenFiles), nil
}
