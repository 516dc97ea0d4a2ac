package turn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/chatcopy"
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

// modelGate stands before the scripted model and holds the requests the
// test names, by their number (from 1), until the test lets them go: the
// test knows the turn is inside that call, for as long as it likes.
type modelGate struct {
	model http.Handler
	asked chan int // each held request's number, as it comes

	mu sync.Mutex
	// guarded by mu
	n    int
	held map[int]chan struct{} // closed: the request goes on
}

// gatedRunner is newRunner's runner, its model behind a gate.
func gatedRunner(t *testing.T, script *scripted.Script) (*Runner, *scripted.Server, *modelGate) {
	t.Helper()
	m := scripted.New(script)
	g := &modelGate{model: m, asked: make(chan int, 16), held: map[int]chan struct{}{}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	env := map[string]string{"LNK_MODEL_PROXY": srv.URL}
	return &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return env[k] }, HTTP: &http.Client{}, Metrics: &metrics.Agent{Name: "ada"}, Open: openLog}, m, g
}

func (g *modelGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.n++
	n, held := g.n, g.held[g.n]
	g.mu.Unlock()
	if held != nil {
		g.asked <- n
		<-held
	}
	g.model.ServeHTTP(w, r)
}

// hold has request n held when it comes.
func (g *modelGate) hold(n int) {
	g.mu.Lock()
	g.held[n] = make(chan struct{})
	g.mu.Unlock()
}

// inCall waits until request n has come and is held.
func (g *modelGate) inCall(t *testing.T, n int) {
	t.Helper()
	if got := <-g.asked; got != n {
		t.Fatalf("request %d held, want %d", got, n)
	}
}

// release lets request n go on.
func (g *modelGate) release(n int) {
	g.mu.Lock()
	close(g.held[n])
	g.mu.Unlock()
}

// sent says how many requests came to the model.
func (g *modelGate) sent() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// waitTurn waits until the turn that holds thread's conversation has
// waiting messages offered to it and not taken, and refs callers hold or
// wait for the conversation. Nothing in the runner reports an offer, so
// it looks at the turn's lock and inbox, yielding between looks; it never
// waits on the clock.
func waitTurn(t *testing.T, r *Runner, thread string, waiting, refs int) {
	t.Helper()
	dir, err := r.Agent.Path(home.Chat, thread)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if n, w, held := r.locks.Queue(dir); held && n == refs && w == waiting {
			return
		}
		runtime.Gosched()
	}
}

// heldTools is a real MCP server over streamable HTTP with one tool, slow,
// each of whose calls says it came (its text on called) and returns only
// once release is called.
func heldTools(t *testing.T) (url string, called <-chan string, release func()) {
	t.Helper()
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	calls, open := make(chan string, 16), make(chan struct{})
	s.AddTool(mcp.NewTool("slow", mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls <- r.GetString("text", "")
		select {
		case <-open:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("slow: " + r.GetString("text", "")), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	var once sync.Once
	return ts.URL, calls, func() { once.Do(func() { close(open) }) }
}

func wait(t *testing.T, ch <-chan told) Answer {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.a
	case <-time.After(20 * time.Second): // a bound on a hang, never a pass
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
	whole := madeCopy(t, r, thread)
	got := readCopy(t, r, thread)
	if got != whole {
		t.Errorf("the copy added to differs from one made from the events:\n%s\n---\n%s", got, whole)
	}
}

// madeCopy is the copy for people of the conversation thread made afresh
// from its events.
func madeCopy(t *testing.T, r *Runner, thread string) string {
	t.Helper()
	conv, err := r.Conversation(thread)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var whole strings.Builder
	if _, err := chatcopy.Write(context.Background(), &whole, r.Agent.Name, conv); err != nil {
		t.Fatal(err)
	}
	return whole.String()
}

// A message that comes while the model answers is appended once that
// answer is, and the model is asked again, so it is answered in the same
// turn; each caller is told the answer after its message.
func TestSteerWhileAnswering(t *testing.T) {
	r, m, g := gatedRunner(t, parseScript(t, `
[[rule]]
match = "first"
text = "first answer"
[[rule]]
match = "second"
text = "second answer"
`))
	g.hold(1)
	first := send(r, "t", Message{ID: "m1", Text: "the first"})
	g.inCall(t, 1)
	second := send(r, "t", Message{ID: "m2", Text: "the second"})
	waitTurn(t, r, "t", 1, 1) // offered to the turn, which holds the only ref
	g.release(1)
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
	web, called, release := heldTools(t)
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
	defer release()
	first := send(r, "t", Message{Text: "go slow"})
	<-called // the tools are running, and wait
	second := send(r, "t", Message{Text: "and slow too"})
	waitTurn(t, r, "t", 1, 1)
	release()
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
	r, _, g := gatedRunner(t, parseScript(t, `
[[rule]]
match = "call no tool"
text = "stopping"
`+loopScript+`
[[rule]]
match = "late"
text = "a turn of its own"
`))
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "web", URL: web}}, tools.Options{})
	t.Cleanup(r.Tools.Close)
	r.Message(context.Background(), "warm", Message{Text: "hello"}, nil)
	n := g.sent()
	last, past := n+MaxRounds+1, n+MaxRounds+2 // the last round's call, the call past it
	g.hold(last)
	g.hold(past)
	first := send(r, "t", Message{Text: "loop forever"})
	g.inCall(t, last)
	second := send(r, "t", Message{Text: "one more thing"})
	waitTurn(t, r, "t", 1, 1)
	g.release(last)
	g.inCall(t, past)
	third := send(r, "t", Message{Text: "too late"})
	waitTurn(t, r, "t", 0, 2) // not offered: it waits for the conversation
	g.release(past)
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
	r, _, g := gatedRunner(t, &scripted.Script{Rules: []scripted.Rule{{Match: "slow", Text: "slow answer"}}})
	g.hold(1)
	first := send(r, "t", Message{ID: "m1", Text: "slow one"})
	g.inCall(t, 1)
	again := send(r, "t", Message{ID: "m1", Text: "slow one"})
	narrowed := send(r, "t", Message{ID: "m2", Text: "narrowed", Tools: []string{}})
	waitTurn(t, r, "t", 1, 2) // the same id offered; the narrowed one waits
	g.release(1)
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
