package measure

import "lnk.dev/linkharness/loadgen/drive"

// Harness metrics measure reads, by name, as /metrics gives them (API.md,
// "Metrics").
const (
	metricTurns        = "lnk_turns_total"
	metricTurnSum      = "lnk_turn_seconds_total"
	metricTurnCount    = "lnk_turns_total"
	metricModelSum     = "lnk_model_call_seconds_total"
	metricStoreRead    = "lnk_store_bytes_read_total"
	metricStoreWritten = "lnk_store_bytes_written_total"
	metricAllocObjects = "go_heap_allocs_objects_total"
	metricAllocBytes   = "go_heap_allocs_bytes_total"
	metricGoroutines   = "go_goroutines"
)

// agentCounters is what measure takes from one agent's metrics.
type agentCounters struct {
	Turns, TurnErrors        float64
	TurnSeconds, TurnCount   float64
	ModelSeconds             float64
	StoreRead, StoreWritten  float64
	AllocObjects, AllocBytes float64 // of the whole process
	Goroutines               float64 // of the whole process
}

// countersOf reads agent name's counters from a scrape.
func countersOf(m drive.Metrics, name string) agentCounters {
	v := func(metric string) float64 {
		x, _ := m.Value(metric, "agent", name)
		return x
	}
	p := func(metric string) float64 {
		x, _ := m.Value(metric)
		return x
	}
	errs, _ := m.Value(metricTurns, "agent", name, "outcome", "error")
	return agentCounters{
		Turns:        v(metricTurns),
		TurnErrors:   errs,
		TurnSeconds:  v(metricTurnSum),
		TurnCount:    v(metricTurnCount),
		ModelSeconds: v(metricModelSum),
		StoreRead:    v(metricStoreRead),
		StoreWritten: v(metricStoreWritten),
		AllocObjects: p(metricAllocObjects),
		AllocBytes:   p(metricAllocBytes),
		Goroutines:   p(metricGoroutines),
	}
}

// minus returns c-o for the counters, and c's gauges as they are.
func (c agentCounters) minus(o agentCounters) agentCounters {
	return agentCounters{
		Turns:        c.Turns - o.Turns,
		TurnErrors:   c.TurnErrors - o.TurnErrors,
		TurnSeconds:  c.TurnSeconds - o.TurnSeconds,
		TurnCount:    c.TurnCount - o.TurnCount,
		ModelSeconds: c.ModelSeconds - o.ModelSeconds,
		StoreRead:    c.StoreRead - o.StoreRead,
		StoreWritten: c.StoreWritten - o.StoreWritten,
		AllocObjects: c.AllocObjects - o.AllocObjects,
		AllocBytes:   c.AllocBytes - o.AllocBytes,
		Goroutines:   c.Goroutines,
	}
}
