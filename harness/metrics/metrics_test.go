package metrics

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond + 1, 3 * time.Second, time.Hour} {
		h.Observe(d)
	}
	want := map[int]uint64{0: 2, 1: 1, 12: 1, nBounds: 1} // le 1ms, le 2ms, le 4.096s, +Inf
	for i := range h.counts {
		if got := h.counts[i].Load(); got != want[i] {
			t.Errorf("bucket %d (le %v): %d, want %d", i, bound(i), got, want[i])
		}
	}
	if h.Count() != 5 {
		t.Errorf("count %d", h.Count())
	}
}

// The page parses as the Prometheus text format, each histogram's buckets
// cumulative and its count what was observed.
func TestWriteParses(t *testing.T) {
	var proc Process
	a := &Agent{Name: "ada", Process: &proc}
	b := &Agent{Name: `b"q\`, Process: &proc}
	a.Turn(20*time.Millisecond, nil, 100, 200)
	a.Turn(2*time.Second, errors.New("x"), 0, 0)
	a.Provider("anthropic").Call(10*time.Millisecond, nil)
	a.Provider("anthropic").Used(10, 20, 30, 40, 0.25)
	a.Provider("anthropic").Used(1, 0, 0, 0, 0.5)
	a.Tool(time.Millisecond, true)
	a.Synced(300 * time.Microsecond)
	a.Summary(nil, 5, 6, 700, 0)
	a.Summary(errors.New("cut"), 1, 2, 0, 0)
	var r Refusals
	r.Add("ada", 401)
	r.Add("", 403)
	r.Add("ada", 401)

	var page bytes.Buffer
	Write(&page, &proc, []*Agent{b, a})
	r.Write(&page)
	Gauge(&page, "lnk_recover_waiting", "Waiting.", []string{"ada"}, func(string) int64 { return 2 })
	fams, err := new(expfmt.TextParser).TextToMetricFamilies(&page)
	if err != nil {
		t.Fatalf("%v\n%s", err, page.String())
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
	metrics:
		for _, m := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				ok := false
				for _, l := range m.Label {
					ok = ok || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !ok {
					continue metrics
				}
			}
			switch {
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
		t.Fatalf("no %s %v", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"lnk_turn_seconds", []string{"outcome", "ok"}, 1},
		{"lnk_turn_seconds", []string{"outcome", "error"}, 1},
		{"lnk_turns_total", []string{"agent", "ada", "outcome", "error"}, 1},
		{"lnk_turns_total", []string{"agent", `b"q\`, "outcome", "ok"}, 0},
		{"lnk_turn_seconds_total", []string{"agent", "ada"}, 2.02},
		{"lnk_model_call_seconds", []string{"provider", "anthropic", "outcome", "ok"}, 1},
		{"lnk_model_calls_total", []string{"agent", "ada", "provider", "anthropic", "outcome", "ok"}, 1},
		{"lnk_model_call_seconds_total", []string{"agent", "ada", "provider", "anthropic"}, 0.01},
		{"lnk_tokens_total", []string{"agent", "ada", "kind", "input"}, 11},
		{"lnk_tokens_total", []string{"agent", "ada", "kind", "cache_write"}, 40},
		{"lnk_cost_usd_total", []string{"agent", "ada"}, 0.75},
		{"lnk_tool_call_seconds", []string{"outcome", "error"}, 1},
		{"lnk_tool_calls_total", []string{"agent", "ada", "outcome", "error"}, 1},
		{"lnk_store_fsync_seconds", nil, 1},
		{"lnk_store_fsyncs_total", []string{"agent", "ada"}, 1},
		{"lnk_store_bytes_written_total", []string{"agent", "ada"}, 200},
		{"lnk_refusals_total", []string{"agent", "ada", "status", "401"}, 2},
		{"lnk_refusals_total", []string{"status", "403"}, 1},
		{"lnk_recover_waiting", []string{"agent", "ada"}, 2},
		{"lnk_summaries_total", []string{"agent", "ada", "outcome", "ok"}, 1},
		{"lnk_summaries_total", []string{"agent", "ada", "outcome", "error"}, 1},
		{"lnk_summary_tokens_total", []string{"agent", "ada", "kind", "cache_read"}, 700},
		{"lnk_summary_tokens_total", []string{"agent", "ada", "kind", "output"}, 8},
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := fams["lnk_turn_seconds"].Metric
	for _, m := range h {
		last := uint64(0)
		for _, bk := range m.Histogram.Bucket {
			if bk.GetCumulativeCount() < last {
				t.Errorf("buckets not cumulative: %v", m.Histogram.Bucket)
			}
			last = bk.GetCumulativeCount()
		}
	}
}

// Counting allocates nothing, once a provider has been seen.
func TestAllocs(t *testing.T) {
	a := &Agent{Name: "ada", Process: new(Process)}
	a.Provider("anthropic")
	err := errors.New("x")
	n := testing.AllocsPerRun(100, func() {
		a.Turn(time.Second, err, 1, 2)
		a.Tool(time.Millisecond, false)
		a.Synced(time.Millisecond)
		p := a.Provider("anthropic")
		p.Call(time.Second, nil)
		p.Used(1, 2, 3, 4, 0.01)
		a.Summary(err, 1, 2, 3, 4)
	})
	if n != 0 {
		t.Errorf("%v allocations a turn's counting, want 0", n)
	}
	var none *Agent // a runner without metrics
	none.Turn(time.Second, nil, 1, 2)
	none.Provider("x").Used(1, 2, 3, 4, 1)
	none.Summary(nil, 1, 2, 3, 4)
}
