package plot

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestPlotGolden(t *testing.T) {
	p := &Plot{
		Title:  "CPU per message <& length>",
		XLabel: "events in the conversation before",
		YLabel: "ms per message",
		X:      []string{"0", "1000", "100000"},
		Series: []Series{
			{Name: "CPU", Y: []float64{0.41, 0.52, 3.7}},
			{Name: "added p50", Y: []float64{0.3, math.NaN(), 2.25}},
			{Name: "empty"},
		},
	}
	var buf bytes.Buffer
	if err := p.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "plot.svg")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("plot differs from %s (run with -update to accept):\n%s", golden, buf.Bytes())
	}
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{
		0: 1, -3: 1, 1: 1, 1.2: 2, 2: 2, 2.1: 2.5, 3.7: 5, 7: 10, 0.041: 0.05, 12345: 20000,
	} {
		if got := niceCeil(v); math.Abs(got-want) > want*1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
