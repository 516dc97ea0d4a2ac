package drive

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const page = `# HELP lnk_turns_total Turns taken.
# TYPE lnk_turns_total counter
lnk_turns_total{agent="a"} 21
lnk_turns_total{agent="b"} 3
lnk_turn_errors_total{agent="a"} 1
lnk_turn_seconds_sum{agent="a"} 0.042
lnk_turn_seconds_count{agent="a"} 21
lnk_turn_seconds_bucket{agent="a",le="+Inf"} 21
lnk_model_seconds_sum{agent="a"} 0.0105
lnk_store_bytes_read_total{agent="a"} 1.5e+06
lnk_store_bytes_written_total{agent="a"} 12600
go_heap_allocs_objects_total 123456
go_heap_allocs_bytes_total 9.87654e+06
go_goroutines 7 1700000000000

odd{a="x\"y",b="back\\slash", c = "new\nline" ,} NaN
`

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		match []string
		want  float64
		ok    bool
	}{
		{"lnk_turns_total", []string{"agent", "a"}, 21, true},
		{"lnk_turns_total", []string{"agent", "b"}, 3, true},
		{"lnk_turns_total", nil, 24, true},
		{"lnk_turns_total", []string{"agent", "c"}, 0, false},
		{"lnk_turn_seconds_bucket", []string{"agent", "a", "le", "+Inf"}, 21, true},
		{"lnk_store_bytes_read_total", []string{"agent", "a"}, 1.5e6, true},
		{"go_heap_allocs_bytes_total", nil, 9.87654e6, true},
		{"go_goroutines", nil, 7, true},
		{"missing", nil, 0, false},
	} {
		got, ok := m.Value(tt.name, tt.match...)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s %v: %v %v, want %v %v", tt.name, tt.match, got, ok, tt.want, tt.ok)
		}
	}
	odd := m[len(m)-1]
	want := []Label{{"a", `x"y`}, {"b", `back\slash`}, {"c", "new\nline"}}
	if odd.Name != "odd" || !math.IsNaN(odd.Value) || len(odd.Labels) != 3 {
		t.Fatalf("odd: %+v", odd)
	}
	for i := range want {
		if odd.Labels[i] != want[i] {
			t.Errorf("odd label %d: %+v, want %+v", i, odd.Labels[i], want[i])
		}
	}
}

func TestParseMetricsBad(t *testing.T) {
	for _, in := range []string{
		`{a="b"} 1`,
		`x{a="b" 1`,
		`x{a=b} 1`,
		`x{a="b} 1`,
		`x{="b"} 1`,
		`x`,
		`x 1 2 3`,
		`x one`,
		`x{a="b"c="d"} 1`,
	} {
		if _, err := ParseMetrics(strings.NewReader(in)); !errors.Is(err, ErrMetrics) {
			t.Errorf("%q: err %v, want ErrMetrics", in, err)
		}
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add(page)
	f.Add(`x{a="\\"} 1`)
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseMetrics(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, s := range m {
			if s.Name == "" {
				t.Fatalf("a series without a name from %q", in)
			}
		}
	})
}
