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
	samples := []metrics.Sample{
		{Name: "/gc/heap/allocs:objects"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(samples)
	for i, m := range []struct{ name, kind, help string }{
		{"go_heap_allocs_objects_total", "counter", "Heap objects allocated."},
		{"go_heap_allocs_bytes_total", "counter", "Heap bytes allocated."},
		{"go_goroutines", "gauge", "Goroutines."},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", m.name, m.help, m.name, m.kind, m.name, samples[i].Value.Uint64())
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Write(b.Bytes())
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
