package server

import (
	"fmt"
	"net/http"
	"runtime/metrics"
	"sort"
	"strings"
)

// metrics writes Prometheus text: each agent's turns, errors, time, and
// bytes, and the process's allocations and goroutines.
func (s *Server) metrics(w http.ResponseWriter) {
	names := make([]string, 0, len(s.agents))
	for n := range s.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, m := range []struct {
		name, kind, help string
		v                func(a *served) string
	}{
		{"lnk_turns_total", "counter", "Turns taken.", func(a *served) string { return fmt.Sprint(a.Runner.Metrics.Turns.Load()) }},
		{"lnk_turn_errors_total", "counter", "Turns that ended in an error.", func(a *served) string { return fmt.Sprint(a.Runner.Metrics.Errors.Load()) }},
		{"lnk_turn_seconds_sum", "counter", "Wall time of every turn.", func(a *served) string { return seconds(a.Runner.Metrics.TurnNanos.Load()) }},
		{"lnk_turn_seconds_count", "counter", "Turns timed.", func(a *served) string { return fmt.Sprint(a.Runner.Metrics.Turns.Load()) }},
		{"lnk_model_seconds_sum", "counter", "The model calls' share of the turns' time.", func(a *served) string { return seconds(a.Runner.Metrics.ModelNanos.Load()) }},
		{"lnk_store_bytes_read_total", "counter", "Bytes read from the store.", func(a *served) string { return fmt.Sprint(a.Runner.Metrics.BytesRead.Load()) }},
		{"lnk_store_bytes_written_total", "counter", "Bytes written to the store and the copy.", func(a *served) string { return fmt.Sprint(a.Runner.Metrics.BytesWritten.Load()) }},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.name, m.help, m.name, m.kind)
		for _, n := range names {
			fmt.Fprintf(&b, "%s{agent=%q} %s\n", m.name, n, m.v(s.agents[n]))
		}
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
	w.Write([]byte(b.String()))
}

func seconds(ns int64) string { return fmt.Sprintf("%.9f", float64(ns)/1e9) }
