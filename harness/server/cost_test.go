package server

import (
	"bytes"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// An answer through OpenRouter keeps the cost OpenRouter reported it
// charged, says so, and /metrics counts that; one through Anthropic,
// which reports tokens alone, is priced from the model facts and says so.
// The model is the same, and its facts' price differs from the charge.
func TestCostAsCharged(t *testing.T) {
	charged := 0.0042
	script := &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "ok",
		Usage: scripted.Usage{Input: 1000, Output: 200, Cost: &charged}}}}
	// 1,000 input tokens at $5 and 200 output at $25 a million.
	const priced = 0.01
	for _, tt := range []struct {
		provider, source string
		cost             float64
	}{
		{"openrouter", event.CostReported, charged},
		{"anthropic", event.CostPriced, priced},
	} {
		t.Run(tt.provider, func(t *testing.T) {
			f := newFixture(t, script, func(r *turn.Runner) {
				s := settings.Defaults()
				s.Model.Name, s.Model.Provider = "anthropic/claude-opus-5-5", tt.provider
				if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
					t.Fatal(err)
				}
			})
			if code, body := f.post(t, "/v1/agents/ada/chats/t/messages", key, `{"text":"hi","owner":true}`); code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			_, b := f.do(t, http.MethodGet, "/v1/agents/ada/chats/t", nil)
			lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
			var d event.Decoder
			var a event.Event
			if err := d.Decode(lines[len(lines)-1], &a); err != nil || a.Type != event.TypeAnswer {
				t.Fatalf("the last event %s: %v", lines[len(lines)-1], err)
			}
			if a.Provider != tt.provider || math.Abs(a.Cost-tt.cost) > 1e-12 || a.CostSource != tt.source ||
				!strings.Contains(string(lines[len(lines)-1]), `,"cost_source":"`+tt.source+`"`) {
				t.Errorf("the answer: %s", lines[len(lines)-1])
			}
			if got := f.counter(t, "lnk_cost_usd_total", "agent", "ada", "provider", tt.provider); math.Abs(got-tt.cost) > 1e-12 {
				t.Errorf("lnk_cost_usd_total %v, want %v", got, tt.cost)
			}
		})
	}
}
