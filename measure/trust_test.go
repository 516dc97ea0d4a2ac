package measure

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestTrustFigures runs the same measurement three times and checks the
// two figures Link Harness is judged by reproduce within 20%: the memory
// one more idle agent adds in one process, and the CPU one more message
// costs. It takes about two minutes, so it runs only with
// LNK_MEASURE_TRUST=1 (BENCHMARKS.md says how):
//
//	LNK_MEASURE_TRUST=1 go test -run TestTrustFigures -v -timeout 15m ./measure
func TestTrustFigures(t *testing.T) {
	if os.Getenv("LNK_MEASURE_TRUST") != "1" {
		t.Skip("set LNK_MEASURE_TRUST=1: three whole measurements")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	program := harnessProgram(ctx, t)
	var mem, cpu []float64
	for i := range 3 {
		res, err := Run(ctx, TrustConfig(program))
		if err != nil {
			t.Fatal(err)
		}
		m := res.Marginal[0]
		var b strings.Builder
		res.WriteTable(&b)
		table := strings.TrimSpace(b.String())
		t.Logf("run %d: one more idle agent %.1f kB RSS (%.1f kB PSS), one more message %.0f µs CPU, over %d messages\n%s",
			i+1, m.IdleMemoryPerAgent.RSS/1e3, m.IdleMemoryPerAgent.PSS/1e3, m.CPUPerMessage*1e6, m.Messages, table[max(0, len(table)-1500):])
		mem = append(mem, m.IdleMemoryPerAgent.RSS)
		cpu = append(cpu, m.CPUPerMessage)
	}
	for _, f := range []struct {
		name string
		xs   []float64
	}{{"idle memory per agent", mem}, {"CPU per message", cpu}} {
		lo, hi := f.xs[0], f.xs[0]
		for _, x := range f.xs {
			lo, hi = min(lo, x), max(hi, x)
		}
		t.Logf("%s: %v, largest / smallest %.3f", f.name, f.xs, hi/lo)
		if lo <= 0 || hi/lo > 1.2 {
			t.Errorf("%s does not reproduce within 20%%: %v", f.name, f.xs)
		}
	}
}
