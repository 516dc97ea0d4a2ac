package measure

import (
	"strings"
	"testing"

	"lnk.dev/linkharness/loadgen/drive"
)

func TestAgentCounters(t *testing.T) {
	m, err := drive.ParseMetrics(strings.NewReader(`# HELP lnk_turns_total Turns taken.
# TYPE lnk_turns_total counter
lnk_turns_total{agent="a",outcome="ok"} 20
lnk_turns_total{agent="b"} 3
lnk_turns_total{agent="a",outcome="error"} 1
lnk_turn_seconds_total{agent="a"} 0.042
lnk_turn_seconds_bucket{outcome="ok",le="+Inf"} 21
lnk_model_call_seconds_total{agent="a"} 0.0105
lnk_store_bytes_read_total{agent="a"} 1.5e+06
lnk_store_bytes_written_total{agent="a"} 12600
go_heap_allocs_objects_total 123456
go_goroutines 7 1700000000000
`))
	if err != nil {
		t.Fatal(err)
	}
	c := countersOf(m, "a")
	if c.Turns != 21 || c.TurnErrors != 1 || c.TurnSeconds != 0.042 || c.TurnCount != 21 || c.ModelSeconds != 0.0105 ||
		c.StoreRead != 1.5e6 || c.StoreWritten != 12600 || c.AllocObjects != 123456 || c.Goroutines != 7 {
		t.Errorf("agent a: %+v", c)
	}
	d := c.minus(agentCounters{Turns: 1, AllocObjects: 456, Goroutines: 99})
	if d.Turns != 20 || d.AllocObjects != 123000 || d.Goroutines != 7 {
		t.Errorf("minus: %+v", d)
	}
}
