package measure

import (
	"strings"
	"testing"

	"lnk.dev/linkharness/measure/drive"
)

func TestAgentCounters(t *testing.T) {
	m, err := drive.ParseMetrics(strings.NewReader(`lnk_turns_total{agent="a"} 21
lnk_turns_total{agent="b"} 3
lnk_turn_errors_total{agent="a"} 1
lnk_model_seconds_sum{agent="a"} 0.0105
go_heap_allocs_objects_total 123456
go_goroutines 7 1700000000000
`))
	if err != nil {
		t.Fatal(err)
	}
	c := countersOf(m, "a")
	if c.Turns != 21 || c.TurnErrors != 1 || c.ModelSeconds != 0.0105 || c.AllocObjects != 123456 || c.Goroutines != 7 {
		t.Errorf("agent a: %+v", c)
	}
	d := c.minus(agentCounters{Turns: 1, AllocObjects: 456, Goroutines: 99})
	if d.Turns != 20 || d.AllocObjects != 123000 || d.Goroutines != 7 {
		t.Errorf("minus: %+v", d)
	}
}
