package loadgen

import (
	"bytes"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TestRunMetrics loads the real harness, half the messages through a tool,
// and reads its /metrics page with the Prometheus text parser: the
// histograms count what the load generator counted itself, every turn,
// every model call (one a message, one more for each tool's result), every
// tool call.
func TestRunMetrics(t *testing.T) {
	var page bytes.Buffer
	res := load(t, Config{Agents: 2, Conversations: 2, Messages: 3, Concurrency: 4,
		ToolShare: 0.5, SampleEvery: 50 * time.Millisecond, Metrics: &page})
	if res.Messages != 12 || res.Errors != 0 {
		t.Fatalf("%d answered, %d errors (%s); want 12, 0", res.Messages, res.Errors, res.FirstError)
	}
	fams, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(page.String()))
	if err != nil {
		t.Fatalf("/metrics: %v\n%s", err, page.String())
	}
	// sum adds the family's values of the series whose labels hold match.
	sum := func(name string, match ...string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		var n float64
		for _, m := range f.Metric {
			if !hasLabels(m, match) {
				continue
			}
			switch {
			case m.Histogram != nil:
				n += float64(m.Histogram.GetSampleCount())
			case m.Counter != nil:
				n += m.Counter.GetValue()
			}
		}
		return n
	}
	toolCalls := 0
	for _, n := range res.ToolCalls {
		toolCalls += n
	}
	for _, c := range []struct {
		name  string
		match []string
		want  int
	}{
		{"lnk_turn_seconds", []string{"outcome", "ok"}, res.Messages},
		{"lnk_turn_seconds", []string{"outcome", "error"}, 0},
		{"lnk_turns_total", nil, res.Messages},
		{"lnk_model_call_seconds", []string{"outcome", "ok"}, res.Messages + res.ToolMessages},
		{"lnk_tool_call_seconds", []string{"outcome", "ok"}, toolCalls},
	} {
		if got := sum(c.name, c.match...); got != float64(c.want) {
			t.Errorf("%s %v counts %v, the load generator %d", c.name, c.match, got, c.want)
		}
	}
	if res.ToolMessages != 6 || toolCalls != 6 {
		t.Errorf("%d tool messages, %d calls; want 6, 6", res.ToolMessages, toolCalls)
	}
	if sum("lnk_store_fsync_seconds") == 0 || sum("lnk_tokens_total", "kind", "input") == 0 || sum("lnk_tokens_total", "kind", "output") == 0 {
		t.Errorf("no fsync or no tokens counted:\n%s", page.String())
	}
	for _, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				switch l.GetName() {
				case "agent", "provider", "outcome", "kind", "status", "le":
				default:
					t.Errorf("%s has the label %s", f.GetName(), l.GetName())
				}
			}
		}
	}
}

// hasLabels says whether m's labels hold each name, value pair of match.
func hasLabels(m *dto.Metric, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		ok := false
		for _, l := range m.Label {
			ok = ok || l.GetName() == match[i] && l.GetValue() == match[i+1]
		}
		if !ok {
			return false
		}
	}
	return true
}
