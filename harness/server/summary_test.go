package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
)

// The answer goes to its caller before the turn summarizes, and the turn
// summarizes still holding the conversation: a message sent meanwhile waits
// for a turn of its own, after it. The summary's request is held at a gate
// until the test lets it fail.
func TestAnswerBeforeSummary(t *testing.T) {
	model := scripted.New(nil)
	asked, release := make(chan struct{}, 1), make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("Write a summary of what leaves")) {
			asked <- struct{}{}
			<-release
			http.Error(w, `{"error":{"type":"api_error","message":"the gate"}}`, http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		model.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { model.Close(); gate.Close() })
	var runner *turn.Runner
	f := newFixture(t, nil, func(r *turn.Runner) {
		runner = r
		env := map[string]string{"LNK_MODEL_PROXY": gate.URL}
		r.Getenv = func(k string) string { return env[k] }
		s := settings.Defaults()
		s.Window.Max, s.Window.MaxSet, s.Window.CompactAt = 2048, true, 0.01
		if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
			t.Fatal(err)
		}
	})
	const path = "/v1/agents/ada/chats/t/messages"
	f.said(t, "t", `{"text":"first"}`, `{"text":"second"}`)
	<-asked // the second turn asks for its summary, its answer given
	if n := f.srv.Running(); n != 1 {
		t.Fatalf("%d turns running while the summary is asked, want the one summarizing", n)
	}
	third := make(chan answerBody, 1)
	go func() {
		code, body := f.post(t, path, key, `{"text":"third"}`)
		var a answerBody
		if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil {
			t.Errorf("third: %d %s", code, body)
		}
		third <- a
	}()
	close(release)
	a := <-third
	f.srv.Wait()
	events, _ := os.ReadFile(filepath.Join(f.home, "chats", "t", "events.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(events)), "\n")
	if len(lines) != 6 || strings.Contains(string(events), `"type":"summary"`) {
		t.Fatalf("events:\n%s", events)
	}
	if a.Seq != 6 || a.Shared || !strings.Contains(lines[4], `"text":"third"`) {
		t.Errorf("the message sent while the turn summarized was told %+v; events:\n%s", a, events)
	}
	// The second turn's summary failed at the gate, and the third turn,
	// the next, asked again and failed there too.
	if runner.Metrics.Summaries(metrics.Failed) != 2 || runner.Metrics.Summaries(metrics.OK) != 0 {
		t.Errorf("summaries counted: %d failed, %d made", runner.Metrics.Summaries(metrics.Failed), runner.Metrics.Summaries(metrics.OK))
	}
	resp, err := http.Get(f.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`lnk_summaries_total{agent="ada",outcome="error"} 2`, `lnk_summaries_total{agent="ada",outcome="ok"} 0`, `lnk_summary_tokens_total{agent="ada",kind="output"} 0`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
