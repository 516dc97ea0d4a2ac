package report

import (
	"fmt"
	"math"
	"testing"
)

func TestLine(t *testing.T) {
	slope, base := line([]float64{1, 10, 100}, []float64{10.5, 15, 60})
	if math.Abs(slope-0.5) > 1e-9 || math.Abs(base-10) > 1e-9 {
		t.Errorf("slope %v base %v, want 0.5 10", slope, base)
	}
	if slope, base := line([]float64{4}, []float64{8}); slope != 2 || base != 0 {
		t.Errorf("one point: slope %v base %v, want 2 0", slope, base)
	}
}

func TestMarginals(t *testing.T) {
	c := func(agents int, layout Layout, rss, cpu float64, msgs int) Case {
		return Case{Agents: agents, Layout: layout, Messages: msgs, Total: Total{IdleMemory: Memory{RSS: rss}, CPUPerMessage: cpu}}
	}
	cases := []Case{
		c(1, Each, 10e6, 0.002, 10),
		c(10, Each, 100e6, 0.002, 100),
		c(10, Shared, 11e6, 0.001, 100),
		c(100, Shared, 20e6, 0.001, 1000),
		{Length: 1000, Agents: 1, Layout: Each, Messages: 10},
	}
	ms := Marginals(cases, []Layout{Each, Shared})
	if len(ms) != 2 {
		t.Fatalf("marginals %+v", ms)
	}
	if e := ms[0]; fmt.Sprint(e.Agents) != "[1 10]" || math.Abs(e.IdleMemoryPerAgent.RSS-10e6) > 1 || e.Messages != 110 {
		t.Errorf("each: %+v", e)
	}
	s := ms[1]
	if fmt.Sprint(s.Agents) != "[1 10 100]" || s.Messages != 1110 || s.IdleMemoryPerAgent.RSS <= 0 || s.IdleMemoryPerAgent.RSS > 0.2e6 {
		t.Errorf("shared: %+v", s)
	}
	if want := (0.002*10 + 0.001*1100) / 1110; math.Abs(s.CPUPerMessage-want) > 1e-12 {
		t.Errorf("shared CPU per message %v, want %v", s.CPUPerMessage, want)
	}
}
