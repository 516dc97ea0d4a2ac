package turn

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// told is what one caller of Runner.Message was told.
type told struct {
	a   Answer
	err error
}

// send sends a message in the background.
func send(r *Runner, thread string, m Message) <-chan told {
	ch := make(chan told, 1)
	go func() {
		a, err := r.Message(context.Background(), thread, m, nil)
		ch <- told{a, err}
	}()
	return ch
}

// waitRequests waits until the model has been asked n times.
func waitRequests(t *testing.T, m *scripted.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(m.Requests()) < n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the model was asked %d times, not %d", len(m.Requests()), n)
		}
	}
}

func wait(t *testing.T, ch <-chan told) Answer {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.a
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
	}
	return Answer{}
}

// types is the events' types, one letter each: message, answer, result.
func types(events []event.Event) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteByte(e.Type[0])
	}
	return b.String()
}

// checkCopy checks the copy added to is the one made from the events.
func checkCopy(t *testing.T, r *Runner, thread string) {
	t.Helper()
	conv, err := r.Conversation(thread)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var whole strings.Builder
	if _, err := WriteCopy(context.Background(), &whole, r.Agent.Name, conv); err != nil {
		t.Fatal(err)
	}
	got := readCopy(t, r, thread)
	if got != whole.String() {
		t.Errorf("the copy added to differs from one made from the events:\n%s\n---\n%s", got, whole.String())
	}
}

// A message that comes while the model answers is appended once that
// answer is, and the model is asked again, so it is answered in the same
// turn; each caller is told the answer after its message.
func TestSteerWhileAnswering(t *testing.T) {
	r, m := newRunner(t, parseScript(t, `
[[rule]]
match = "first"
text = "first answer"
latency_ms = 300
[[rule]]
match = "second"
text = "second answer"
`))
	first := send(r, "t", Message{ID: "m1", Text: "the first"})
	waitRequests(t, m, 1)
	second := send(r, "t", Message{ID: "m2", Text: "the second"})
	a1, a2 := wait(t, first), wait(t, second)
	ev := readEvents(t, r, "t")
	if got := types(ev); got != "mama" {
		t.Fatalf("events %s, want message, answer, the steering message, answer", got)
	}
	if a1.Seq != 2 || a1.Text != "first answer" || a1.Shared || a2.Seq != 4 || a2.Text != "second answer" || a2.Shared {
		t.Errorf("told %+v and %+v", a1, a2)
	}
	if ev[2].ID != "m2" || ev[2].Head == "" || ev[2].Text != "the second" {
		t.Errorf("the steering message %+v", ev[2])
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "the second") || !strings.Contains(string(reqs[1]), "first answer") {
		t.Fatalf("%d requests; the second: %s", len(reqs), reqs[len(reqs)-1])
	}
	if got := r.Metrics.Turns(metrics.OK); got != 1 {
		t.Errorf("%d turns, want 1", got)
	}
	checkCopy(t, r, "t")
}

// A message that comes while tools run is appended after the round's
// results, never between a call and its result, and the next round's
// prompt holds it. Both callers are told the one answer after them; the
// later one's is marked shared.
func TestSteerWhileToolsRun(t *testing.T) {
	web, _ := webServer(t)
	r, m := toolRunner(t, parseScript(t, `
[[rule]]
match = "slow"
results = "no"
[[rule.call]]
name = "web__slow"
args = '{"text":"a"}'
[[rule.call]]
name = "web__slow"
args = '{"text":"b"}'
[[rule]]
match = "slow"
results = "yes"
text = "both done"
`), tools.Server{Name: "web", URL: web})
	r.Message(context.Background(), "warm", Message{Text: "hello"}, nil) // the process lists the tools
	n := len(m.Requests())
	first := send(r, "t", Message{Text: "go slow"})
	waitRequests(t, m, n+1)
	time.Sleep(slowCall / 3) // the tools are running
	second := send(r, "t", Message{Text: "and slow too"})
	a1, a2 := wait(t, first), wait(t, second)
	ev := readEvents(t, r, "t")
	if got := types(ev); got != "marrma" {
		t.Fatalf("events %s, want message, answer, two results, the steering message, answer", got)
	}
	if a1.Seq != 6 || a2.Seq != 6 || a1.Text != "both done" || a1.Shared || !a2.Shared {
		t.Errorf("told %+v and %+v", a1, a2)
	}
	if last := string(m.Requests()[len(m.Requests())-1]); !strings.Contains(last, "and slow too") || !strings.Contains(last, "slow: b") {
		t.Errorf("the second round's request lacks the message or the results: %s", last)
	}
	checkCopy(t, r, "t")
}

// A message that comes during the last round's call (the ninth, told to
// call nothing) is answered all the same: the model is asked once more.
// One that comes during that call past the last round waits for a turn of
// its own.
func TestSteerPastLastRound(t *testing.T) {
	web, _ := webServer(t)
	r, m := toolRunner(t, parseScript(t, `
[[rule]]
match = "call no tool"
text = "stopping"
latency_ms = 400
[[rule]]
match = "loop"
text = "again"
[[rule.call]]
name = "web__echo"
args = '{"text":"x"}'
[[rule]]
match = "late"
text = "a turn of its own"
`), tools.Server{Name: "web", URL: web})
	r.Message(context.Background(), "warm", Message{Text: "hello"}, nil)
	n := len(m.Requests())
	first := send(r, "t", Message{Text: "loop forever"})
	waitRequests(t, m, n+MaxRounds+1) // the last round's call
	second := send(r, "t", Message{Text: "one more thing"})
	waitRequests(t, m, n+MaxRounds+2) // the call past it, for the steering message
	time.Sleep(50 * time.Millisecond)
	third := send(r, "t", Message{Text: "too late"})
	a1, a2, a3 := wait(t, first), wait(t, second), wait(t, third)

	ev := readEvents(t, r, "t")
	answers := ofType(ev, event.TypeAnswer)
	if len(answers) != MaxRounds+3 {
		t.Fatalf("%d answers, want %d: %s", len(answers), MaxRounds+3, types(ev))
	}
	if a1.Seq != answers[MaxRounds].Seq || a2.Seq != answers[MaxRounds+1].Seq || a3.Seq != answers[MaxRounds+2].Seq || a3.Text != "a turn of its own" {
		t.Errorf("told %+v, %+v, %+v", a1, a2, a3)
	}
	if got := types(ev[len(ev)-4:]); got != "mama" || ev[len(ev)-4].Text != "one more thing" || ev[len(ev)-2].Text != "too late" {
		t.Errorf("the conversation ends %s", got)
	}
	if got := r.Metrics.Turns(metrics.OK); got != 3 {
		t.Errorf("%d turns, want 3: the warm one, the steered one, the late message's own", got)
	}
	checkCopy(t, r, "t")
}

// A message carrying Link-Tools, and one whose id the running turn holds,
// wait for a turn of their own; the same id is then answered as taken.
func TestSteerRefused(t *testing.T) {
	r, m := newRunner(t, &scripted.Script{Rules: []scripted.Rule{{Match: "slow", LatencyMS: 300, Text: "slow answer"}}})
	first := send(r, "t", Message{ID: "m1", Text: "slow one"})
	waitRequests(t, m, 1)
	again := send(r, "t", Message{ID: "m1", Text: "slow one"})
	narrowed := send(r, "t", Message{ID: "m2", Text: "narrowed", Tools: []string{}})
	a1, again1, n := wait(t, first), wait(t, again), wait(t, narrowed)
	if again1.Seq != a1.Seq || !again1.Repeat {
		t.Errorf("the same id again: %+v, first %+v", again1, a1)
	}
	if got := types(readEvents(t, r, "t")); got != "mama" || n.Seq != 4 {
		t.Errorf("events %s, narrowed told %+v", got, n)
	}
}

func readCopy(t *testing.T, r *Runner, thread string) string {
	t.Helper()
	path, err := r.Agent.Path(home.ChatCopy, thread)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
