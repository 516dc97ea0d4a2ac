package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"lnk.dev/linkharness/loadgen/scripted"
)

// sseEvent is one server-sent event as a caller reads it.
type sseEvent struct{ name, data string }

// stream posts body to path asking for a stream and returns its events in
// the order they came.
func (f *fixture) stream(t *testing.T, path, body string) []sseEvent {
	t.Helper()
	resp, err := http.DefaultClient.Do(request(t, http.MethodPost, f.url+path, key, body, "Accept", "text/event-stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []sseEvent
	readSSE(resp.Body, func(name, data string) { events = append(events, sseEvent{name, data}) })
	return events
}

// A streamed turn with two rounds of one tool call each, the second call
// to a tool the conversation has not: each call is told as it is made,
// with its arguments as sent, and its outcome (ok, or not, no text) before
// the model is asked again; then the answer's deltas, then done.
func TestStreamToolCalls(t *testing.T) {
	sc, err := scripted.ParseScript([]byte(`
[[rule]]
match = "look"
results = "no"
[[rule.call]]
name = "web__echo"
args = '{"text":"hi"}'
[[rule]]
match = "look"
round = 1
[[rule.call]]
name = "web__nothing"
[[rule]]
match = "look"
round = 2
text = "looked twice"
chunks = 3
`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, sc, withWeb(t, nil))
	events := f.stream(t, "/v1/agents/ada/chats/web:1/messages", `{"id":"m1","text":"look it up"}`)
	var names []string
	for _, e := range events {
		if len(names) == 0 || e.name != "delta" || names[len(names)-1] != "delta…" {
			names = append(names, e.name)
		}
		if e.name == "delta" {
			names[len(names)-1] = "delta…"
		}
	}
	if got := strings.Join(names, " "); got != "call result call result delta… done" {
		t.Fatalf("events %s, want call result call result delta… done; all: %v", got, events)
	}
	type step struct {
		Tool string
		ID   string
		Args json.RawMessage `json:"arguments"`
		OK   *bool
	}
	var s [4]step
	for i := range s {
		if err := json.Unmarshal([]byte(events[i].data), &s[i]); err != nil {
			t.Fatal(err)
		}
	}
	if s[0].Tool != "web__echo" || s[0].ID == "" || string(s[0].Args) != `{"text":"hi"}` || s[0].OK != nil {
		t.Errorf("first call %s", events[0].data)
	}
	if s[1].Tool != "web__echo" || s[1].ID != s[0].ID || s[1].OK == nil || !*s[1].OK || s[1].Args != nil {
		t.Errorf("first result %s, want web__echo ok", events[1].data)
	}
	if s[2].Tool != "web__nothing" || string(s[2].Args) != `{}` || s[2].ID == s[0].ID {
		t.Errorf("second call %s", events[2].data)
	}
	if s[3].ID != s[2].ID || s[3].OK == nil || *s[3].OK {
		t.Errorf("second result %s, want not ok: there is no such tool", events[3].data)
	}
	if last := events[len(events)-1].data; !strings.Contains(last, `"text":"looked twice"`) {
		t.Errorf("done %s", last)
	}
	// Without a stream, nothing of it changes the answer.
	code, body := f.post(t, "/v1/agents/ada/chats/web:2/messages", key, `{"id":"m2","text":"look again"}`)
	if code != 200 || !strings.Contains(body, "looked twice") {
		t.Errorf("unstreamed: %d %s", code, body)
	}
}
