package server

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// operations reads lnk_operations_total of kind for agent from /metrics.
func (f *fixture) operations(t *testing.T, agent, kind string) float64 {
	t.Helper()
	return f.counter(t, "lnk_operations_total", "agent", agent, "kind", kind)
}

// family reads the metric family name from /metrics, through
// Prometheus's own text parser, and returns it with the page it was read
// from.
func (f *fixture) family(t *testing.T, name string) (*dto.MetricFamily, string) {
	t.Helper()
	_, page := exchange(t, http.MethodGet, f.url+"/metrics", "", "")
	fams, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("%v\n%s", err, page)
	}
	fam := fams[name]
	if fam == nil {
		t.Fatalf("no %s:\n%s", name, page)
	}
	return fam, page
}

// labels is a series' labels, their values by name.
func labels(m *dto.Metric) map[string]string {
	l := make(map[string]string, len(m.Label))
	for _, p := range m.Label {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// counter reads the counter of family whose labels hold the pairs given
// from /metrics.
func (f *fixture) counter(t *testing.T, family string, pairs ...string) float64 {
	t.Helper()
	fam, _ := f.family(t, family)
	for _, m := range fam.Metric {
		got := labels(m)
		match := true
		for i := 0; i+1 < len(pairs); i += 2 {
			match = match && got[pairs[i]] == pairs[i+1]
		}
		if match {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s for %q", family, pairs)
	return 0
}

// POST …/end ends the running turn: the turn's caller and the end's are
// told the answer marked ended, and the end is counted. With no turn
// running it is 409, saying so, and nothing is written.
func TestEndOverHTTP(t *testing.T) {
	f := newFixture(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "stall", Text: "words and then nothing", Chunks: 4, Stall: true, AfterChunks: 1},
		{Match: "any", Text: "hi"},
	}})
	before := tree(t, f.home)
	code, body := f.post(t, "/v1/agents/ada/chats/t/end", key, "")
	if code != http.StatusConflict || !strings.Contains(body, "no turn of the conversation is running") {
		t.Fatalf("an end with no turn: %d %s", code, body)
	}
	if after := tree(t, f.home); after != before {
		t.Errorf("an end with no turn wrote:\n%s\nwas:\n%s", after, before)
	}
	// Streamed, so the end comes once the turn has the model's first words
	// (the model then stalls), not merely once the model was asked.
	answered, said := f.streamLater(t, "/v1/agents/ada/chats/t/messages", `{"id":"m1","text":"stall"}`)
	<-said
	if code, body := f.do(t, http.MethodGet, "/asp/v1/agents/ada/status", nil); code != 200 || string(body) != `{"agent":"ada","running":true,"threads":["t"]}`+"\n" {
		t.Errorf("status while the turn runs: %d %s", code, body)
	}
	code, body = f.post(t, "/v1/agents/ada/chats/t/end", key, "")
	if code != 200 || !strings.Contains(body, `"ended":true`) {
		t.Fatalf("end: %d %s", code, body)
	}
	a := <-answered
	if !a.Ended || a.Seq != 2 || !strings.HasPrefix("words and then nothing", a.Text) {
		t.Errorf("the turn's caller was told %+v", a)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/t/messages", key, `{"id":"m2","text":"hello"}`); code != 200 || !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("the next message: %d %s", code, body)
	}
	if code, _ := f.post(t, "/v1/agents/ada/chats/t/end", "wrong key", ""); code != http.StatusUnauthorized {
		t.Errorf("an end with a wrong key: %d", code)
	}
	if n := f.operations(t, "ada", "end"); n != 1 {
		t.Errorf("ends counted %v, want 1", n)
	}
}

// POST …/fork answers the new message in a new conversation named in the
// answer; a before that is not an owner message is 400 saying why; a bad
// body is 400; each fork is counted.
func TestForkOverHTTP(t *testing.T) {
	f := newFixture(t, nil)
	f.said(t, "t", `{"text":"one","owner":true}`, `{"text":"two","owner":true}`)
	code, body := f.post(t, "/v1/agents/ada/chats/t/fork", key, `{"before":3,"text":"TWO"}`)
	if code != 200 || !strings.Contains(body, `"thread":"t:fork3"`) || !strings.Contains(body, `"seq":4`) {
		t.Fatalf("fork: %d %s", code, body)
	}
	for _, c := range []struct{ body, why string }{
		{`{"before":2,"text":"x"}`, "seq 2 of \\\"t\\\" is of type answer, not an owner message"},
		{`{"before":9,"text":"x"}`, "before 9 is not a seq"},
		{`{"text":"x"}`, "no before"},
		{`{"before":1}`, "no text"},
		{`{"before":1,"text":"x","txt":1}`, "unknown field"},
	} {
		code, body := f.post(t, "/v1/agents/ada/chats/t/fork", key, c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, c.why) {
			t.Errorf("%s: %d %s, want 400 saying %q", c.body, code, body, c.why)
		}
	}
	if n := f.operations(t, "ada", "fork"); n != 1 {
		t.Errorf("forks counted %v, want 1", n)
	}
}

// One server given an import, ends, forks, a crashed answer's hand-over
// and an export, with a refusal of each beside them: /metrics, read by
// Prometheus's own text parser, counts each operation that was done and
// none that was refused, and nothing else; the server's log has each
// once, with its agent, thread and seq.
func TestOperationsCounted(t *testing.T) {
	from := newFixture(t, nil)
	from.said(t, "web:1", `{"text":"one","owner":true}`, `{"text":"two","owner":true}`)
	code, archive := from.do(t, http.MethodGet, "/asp/v1/agents/ada/state", nil)
	if code != 200 {
		t.Fatalf("export: %d %s", code, archive)
	}

	logs := new(hometest.Logs)
	f := newFixture(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "stall", Text: "words and then nothing", Chunks: 4, Stall: true, AfterChunks: 1},
		{Match: "any", Text: "hi"},
	}}, func(r *turn.Runner) { r.Log = slog.New(slog.NewJSONHandler(logs, nil)) })
	want := map[string]float64{}
	if code, body := f.do(t, http.MethodPut, "/asp/v1/agents/ada/state", archive[:len(archive)/2]); code != http.StatusBadRequest {
		t.Fatalf("a truncated import: %d %s", code, body)
	}
	if code, body := f.do(t, http.MethodPut, "/asp/v1/agents/ada/state", archive); code != 200 {
		t.Fatalf("import: %d %s", code, body)
	}
	want["import"]++

	if code, body := f.post(t, "/v1/agents/ada/chats/e0/end", key, ""); code != http.StatusConflict {
		t.Fatalf("an end with no turn: %d %s", code, body)
	}
	for _, thread := range []string{"e1", "e2", "e3"} { // no model request before these: each asked is theirs
		answered := f.postLater(t, "/v1/agents/ada/chats/"+thread+"/messages", `{"text":"stall","owner":true}`)
		<-f.asked
		if code, body := f.post(t, "/v1/agents/ada/chats/"+thread+"/end", key, ""); code != 200 {
			t.Fatalf("end %s: %d %s", thread, code, body)
		}
		if a := <-answered; !a.Ended {
			t.Fatalf("%s's caller was told %+v", thread, a)
		}
		want["end"]++
	}

	for _, c := range []struct {
		body string
		code int
	}{
		{`{"before":3,"text":"TWO"}`, 200},
		{`{"before":2,"text":"x"}`, http.StatusBadRequest}, // an answer
		{`{"before":1,"text":"ONE"}`, 200},
	} {
		code, body := f.post(t, "/v1/agents/ada/chats/web:1/fork", key, c.body)
		if code != c.code {
			t.Fatalf("fork %s: %d %s, want %d", c.body, code, body, c.code)
		}
		if code == 200 {
			want["fork"]++
		}
	}
	code, body := f.post(t, "/v1/agents/ada/chats/web:1:fork3/fork", key, `{"before":3,"text":"THREE"}`) // a fork of a fork
	if code != 200 {
		t.Fatalf("a fork of a fork: %d %s", code, body)
	}
	want["fork"]++

	// An answer written by a process that died before telling it, after
	// one that was told.
	f.said(t, "c", `{"id":"m0","text":"told","owner":true}`)
	now := time.Now().UTC()
	f.kept(t, "c",
		event.Event{Seq: 3, Time: now, Type: event.TypeMessage, ID: "m1", Owner: true, Text: "never told"},
		event.Event{Seq: 4, Time: now, Type: event.TypeAnswer, Text: "the answer nobody got"})
	f.said(t, "c", `{"id":"m2","text":"next","owner":true}`)
	if got := f.recoverOnce(t); len(got) != 1 || !got[0].Crashed {
		t.Fatalf("recover: %+v, want the crashed answer", got)
	}
	if got := f.recoverOnce(t); len(got) != 0 {
		t.Fatalf("handed over twice: %+v", got)
	}
	want["hand_over"]++

	if code, body := f.do(t, http.MethodGet, "/asp/v1/agents/ada/state", nil); code != 200 {
		t.Fatalf("export: %d %s", code, body)
	}
	want["export"]++

	fam, page := f.family(t, "lnk_operations_total")
	if fam.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("no counter lnk_operations_total:\n%s", page)
	}
	got := map[string]float64{}
	for _, m := range fam.Metric {
		l := labels(m)
		if l["agent"] != "ada" || len(l) != 2 {
			t.Errorf("a series of labels %v", l)
			continue
		}
		if v := m.GetCounter().GetValue(); v != 0 {
			got[l["kind"]] = v
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("lnk_operations_total by kind %v, want %v\n%s", got, want, page)
	}

	logged := map[string]float64{}
	for _, rec := range logs.Lines(t) {
		kind := map[any]string{"conversation imported": "import", "turn ended": "end", "forked": "fork", "answer handed over": "hand_over", "state exported": "export"}[rec["msg"]]
		if kind == "" {
			continue
		}
		logged[kind]++
		if rec["agent"] != "ada" || (kind != "export" && (rec["thread"] == nil || rec["seq"] == nil)) {
			t.Errorf("a %s logged without its agent, thread or seq: %v", kind, rec)
		}
	}
	if !maps.Equal(logged, want) {
		t.Errorf("operations logged %v, want %v", logged, want)
	}
}

// streamLater posts body to path asking for a stream, and returns the
// answer its done event says, and a channel closed once its first delta
// came.
func (f *fixture) streamLater(t *testing.T, path, body string) (<-chan answerBody, <-chan struct{}) {
	ch, said := make(chan answerBody, 1), make(chan struct{})
	req := request(t, http.MethodPost, f.url+path, key, body, "Accept", "text/event-stream")
	go func() {
		var a answerBody
		defer func() { ch <- a }()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(said)
			return
		}
		defer resp.Body.Close()
		first := true
		readSSE(resp.Body, func(ev, data string) {
			switch {
			case ev == "delta" && first:
				first = false
				close(said)
			case ev == "done":
				if err := json.Unmarshal([]byte(data), &a); err != nil {
					t.Errorf("done: %v", err)
				}
			}
		})
		if first {
			t.Errorf("%s: no delta came", body)
			close(said)
		}
	}()
	return ch, said
}

// /metrics tells where the process's memory is, through Prometheus's own
// parser: its resident memory, the heap live at the last collection and
// the collector's goal for it, the heap's objects and the goroutines'
// stacks.
func TestMemoryMetrics(t *testing.T) {
	f := newFixture(t, nil)
	f.said(t, "web:1", `{"text":"one","owner":true}`)
	gauge := func(name string) float64 {
		fam, page := f.family(t, name)
		if fam.GetType() != dto.MetricType_GAUGE || len(fam.Metric) != 1 || fam.Metric[0].GetGauge().GetValue() <= 0 {
			t.Fatalf("%s is not one gauge above 0:\n%s", name, page)
		}
		return fam.Metric[0].GetGauge().GetValue()
	}
	live, goal := gauge("go_gc_heap_live_bytes"), gauge("go_gc_heap_goal_bytes")
	if goal < live {
		t.Errorf("the collector's goal %.0f is below the heap live at the last collection, %.0f", goal, live)
	}
	for _, name := range []string{"process_resident_memory_bytes", "go_memory_heap_objects_bytes", "go_memory_stacks_bytes", "go_goroutines"} {
		gauge(name)
	}
}
