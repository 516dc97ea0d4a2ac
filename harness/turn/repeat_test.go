package turn

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// countServer is a real MCP server over streamable HTTP with one tool,
// count, that counts its calls.
func countServer(t testing.TB) (string, *atomic.Int64) {
	t.Helper()
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	var calls atomic.Int64
	s.AddTool(mcp.NewTool("count", mcp.WithString("text")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(fmt.Sprintf("call %d: %s", calls.Add(1), r.GetString("text", ""))), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL, &calls
}

// countRunner is a runner whose agent has web__count, and whose model is
// scripted by script.
func countRunner(t *testing.T, script *scripted.Script) (*Runner, *scripted.Server, *atomic.Int64) {
	t.Helper()
	url, calls := countServer(t)
	r, m := toolRunner(t, script, tools.Server{Name: "web", URL: url})
	return r, m, calls
}

// countScript is a model that, sent a message holding match, calls
// web__count n times in one round, with the texts 0 to n-1, and then
// answers text.
func countScript(match string, n int, text string) *scripted.Script {
	calls := make([]scripted.Call, n)
	for i := range calls {
		calls[i] = scripted.Call{Name: "web__count", Args: fmt.Sprintf(`{"text":"%d"}`, i)}
	}
	return &scripted.Script{Rules: []scripted.Rule{
		{Match: match, Results: "no", Calls: calls},
		{Match: match, Results: "yes", Text: text},
	}}
}

// idsOf counts the messages in events carrying id.
func idsOf(events []event.Event, id string) int {
	n := 0
	for _, e := range ofType(events, event.TypeMessage) {
		if e.ID == id {
			n++
		}
	}
	return n
}

// A retry after a turn of 31 tool calls (34 events) is told the same
// answer, and no tool runs again.
func TestRetryAfterManyCalls(t *testing.T) {
	r, m, counted := countRunner(t, countScript("many", 31, "thirty-one counted"))
	ctx := context.Background()
	first, err := r.Message(ctx, "t", Message{ID: "m-many", Text: "many calls"}, nil)
	if err != nil || first.Text != "thirty-one counted" || counted.Load() != 31 {
		t.Fatalf("%+v %v, %d calls", first, err, counted.Load())
	}
	checkRetry(t, r, m, counted, Message{ID: "m-many", Text: "many calls"}, first, 31)
	if ev := readEvents(t, r, "t"); len(ev) != 34 || idsOf(ev, "m-many") != 1 {
		t.Errorf("%d events, the id %d times", len(ev), idsOf(ev, "m-many"))
	}
}

// checkRetry sends msg to conversation t again and checks it is told
// first's answer, marked a repeat, without asking the model, and that the
// tools have run calls times in all.
func checkRetry(t *testing.T, r *Runner, m *scripted.Server, counted *atomic.Int64, msg Message, first Answer, calls int64) {
	t.Helper()
	asked := len(m.Requests())
	again, err := r.Message(context.Background(), "t", msg, nil)
	if err != nil || !again.Repeat || again.Seq != first.Seq || again.Text != first.Text {
		t.Errorf("the retry: %+v %v, want %+v", again, err, first)
	}
	if counted.Load() != calls || len(m.Requests()) != asked {
		t.Errorf("the retry ran %d tools and asked the model %d times", counted.Load()-calls, len(m.Requests())-asked)
	}
}

// A retry after 40 plain turns is told the same answer, and no tool runs
// again.
func TestRetryAfterFortyTurns(t *testing.T) {
	r, m, counted := countRunner(t, countScript("first", 1, "counted once"))
	ctx := context.Background()
	first, err := r.Message(ctx, "t", Message{ID: "m-first", Text: "first"}, nil)
	if err != nil || first.Text != "counted once" {
		t.Fatalf("%+v %v", first, err)
	}
	for i := range 40 {
		if _, err := r.Message(ctx, "t", Message{ID: fmt.Sprintf("m-%d", i), Text: fmt.Sprintf("plain %d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	checkRetry(t, r, m, counted, Message{ID: "m-first", Text: "first"}, first, 1)
	if ev := readEvents(t, r, "t"); idsOf(ev, "m-first") != 1 {
		t.Errorf("the id %d times", idsOf(ev, "m-first"))
	}
}

// A message with no id sent again is one message: told the same answer,
// nothing written, no tool run. The same words from another sender, or
// once anything else was said, are a new message.
func TestRetryWithoutID(t *testing.T) {
	r, m, counted := countRunner(t, countScript("count", 1, "counted"))
	ctx := context.Background()
	ada := Message{Text: "count please", From: event.Sender{ID: "u1", Name: "Ada"}, Connection: "telegram"}
	first, err := r.Message(ctx, "t", ada, nil)
	if err != nil || counted.Load() != 1 {
		t.Fatalf("%+v %v", first, err)
	}
	checkRetry(t, r, m, counted, ada, first, 1)
	if ev := readEvents(t, r, "t"); len(ofType(ev, event.TypeMessage)) != 1 {
		t.Fatalf("%d messages, want 1", len(ofType(ev, event.TypeMessage)))
	}
	bob := ada
	bob.From = event.Sender{ID: "u2", Name: "Bob"}
	if a, err := r.Message(ctx, "t", bob, nil); err != nil || a.Repeat {
		t.Errorf("the same words from another sender: %+v %v", a, err)
	}
	if a, err := r.Message(ctx, "t", ada, nil); err != nil || a.Repeat {
		t.Errorf("the same words once something else was said: %+v %v", a, err)
	}
	if ev := readEvents(t, r, "t"); len(ofType(ev, event.TypeMessage)) != 3 {
		t.Errorf("%d messages, want 3", len(ofType(ev, event.TypeMessage)))
	}
}

// failModel answers the requests named, by number from 1, with the 500 of
// a scripted model, and the others with the scripted model it is given.
type failModel struct {
	model, fail http.Handler

	mu sync.Mutex
	// guarded by mu
	n     int
	fails map[int]bool
}

func newFailModel(script *scripted.Script, fails ...int) *failModel {
	f := &failModel{
		model: scripted.New(script),
		fail:  scripted.New(&scripted.Script{Rules: []scripted.Rule{{Match: "any", Status: 500}}}),
		fails: map[int]bool{},
	}
	for _, n := range fails {
		f.fails[n] = true
	}
	return f
}

func (f *failModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.n++
	fail := f.fails[f.n]
	f.mu.Unlock()
	if fail {
		f.fail.ServeHTTP(w, r)
		return
	}
	f.model.ServeHTTP(w, r)
}

func (f *failModel) asked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// failRunner is a runner whose model is h, with web__count.
func failRunner(t *testing.T, h http.Handler) (*Runner, *atomic.Int64) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	env := map[string]string{"LNK_MODEL_PROXY": srv.URL}
	url, calls := countServer(t)
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return env[k] }, HTTP: &http.Client{}, Metrics: &metrics.Agent{Name: "ada"}, Open: openLog}
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "web", URL: url}}, tools.Options{})
	t.Cleanup(r.Tools.Close)
	return r, calls
}

// A retry after the model's 500 is answered, and the conversation holds
// the message once.
func TestRetryAfterModelError(t *testing.T) {
	f := newFailModel(&scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "answered at last"}}}, 1)
	r, _ := failRunner(t, f)
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("the first try: %v, want the model's 500", err)
	}
	a, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil)
	if err != nil || a.Text != "answered at last" || a.Repeat || a.Seq != 2 {
		t.Fatalf("the retry: %+v %v", a, err)
	}
	ev := readEvents(t, r, "t")
	if types(ev) != "ma" || idsOf(ev, "m-1") != 1 {
		t.Errorf("events %q, the id %d times", types(ev), idsOf(ev, "m-1"))
	}
	if again, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil); err != nil || !again.Repeat || again.Seq != 2 {
		t.Errorf("once answered: %+v %v", again, err)
	}
}

// A retry after a 500 that came once the tools ran runs none again: the
// turn goes on from the results written.
func TestRetryAfterModelErrorRunsNoToolAgain(t *testing.T) {
	f := newFailModel(&scripted.Script{Rules: []scripted.Rule{
		{Match: "three", Results: "no", Calls: []scripted.Call{{Name: "web__count", Args: `{"text":"a"}`}, {Name: "web__count", Args: `{"text":"b"}`}, {Name: "web__count", Args: `{"text":"c"}`}}},
		{Match: "three", Results: "yes", Text: "three counted"},
	}}, 2)
	r, counted := failRunner(t, f)
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{ID: "m-3", Text: "three"}, nil); err == nil || counted.Load() != 3 {
		t.Fatalf("the first try: %v, %d calls", err, counted.Load())
	}
	a, err := r.Message(ctx, "t", Message{ID: "m-3", Text: "three"}, nil)
	if err != nil || a.Text != "three counted" {
		t.Fatalf("the retry: %+v %v", a, err)
	}
	if counted.Load() != 3 || f.asked() != 3 {
		t.Errorf("the retry ran %d tools again; the model was asked %d times, want 3", counted.Load()-3, f.asked())
	}
	if ev := readEvents(t, r, "t"); types(ev) != "marrra" || idsOf(ev, "m-3") != 1 {
		t.Errorf("events %q", types(ev))
	}
}

// A turn that ended between two calls' results (a process killed) leaves
// the second call unanswered: a retry makes that call, and only it.
func TestRetryRunsOnlyUnansweredCalls(t *testing.T) {
	f := newFailModel(&scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "both known"}}})
	r, counted := failRunner(t, f)
	dir, _ := r.Agent.Path(home.Chat, "t")
	os.MkdirAll(dir, 0o700)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var buf []byte
	for i, e := range []event.Event{
		{Thread: "t", Type: event.TypeMessage, ID: "m-2", Text: "two calls"},
		{Type: event.TypeAnswer, Calls: []event.Call{{ID: "c1", Name: "web__count", Args: []byte(`{"text":"1"}`)}, {ID: "c2", Name: "web__count", Args: []byte(`{"text":"2"}`)}}},
		{Type: event.TypeResult, CallID: "c1", Name: "web__count", Text: "call 0: 1"},
	} {
		e.Seq, e.Time = int64(i+1), at
		buf = append(event.Append(buf, &e), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := r.Message(context.Background(), "t", Message{ID: "m-2", Text: "two calls"}, nil)
	if err != nil || a.Text != "both known" || a.Seq != 5 {
		t.Fatalf("%+v %v", a, err)
	}
	ev := readEvents(t, r, "t")
	if counted.Load() != 1 || types(ev) != "marra" || ev[3].CallID != "c2" {
		t.Errorf("%d calls made, events %q, want only c2 made", counted.Load(), types(ev))
	}
}

// gateFail is a model behind a gate (see modelGate) whose requests fail
// with a 500 where the test says.
func gateFail(t *testing.T, script *scripted.Script, fails ...int) (*Runner, *modelGate) {
	t.Helper()
	g := &modelGate{model: newFailModel(script, fails...), asked: make(chan int, 16), held: map[int]chan struct{}{}}
	r, _ := failRunner(t, g)
	return r, g
}

// sendCtx sends a message in the background with ctx.
func sendCtx(ctx context.Context, r *Runner, thread string, m Message) <-chan told {
	ch := make(chan told, 1)
	go func() {
		a, err := r.Message(ctx, thread, m, nil)
		ch <- told{a, err}
	}()
	return ch
}

// failBeforeQueued sends alpha as a, holds the model's first call, sends
// bee as b behind it, its caller then gone, and lets the call go: it checks
// alpha's turn fails, and returns what bee is told.
func failBeforeQueued(t *testing.T, r *Runner, g *modelGate) Answer {
	t.Helper()
	g.hold(1)
	a := send(r, "t", Message{ID: "a", Text: "alpha"})
	g.inCall(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	b := sendCtx(ctx, r, "t", Message{ID: "b", Text: "bee"})
	waitTurn(t, r, "t", 1, 1)
	cancel() // its caller is gone
	g.release(1)
	if o := <-a; o.err == nil {
		t.Errorf("the failed turn's message: %+v, want the model's error", o.a)
	}
	return wait(t, b)
}

// A message that came while a turn ran, its caller gone, is answered when
// that turn fails before taking it: it has a turn of its own.
func TestQueuedBehindFailedTurn(t *testing.T) {
	r, g := gateFail(t, &scripted.Script{Rules: []scripted.Rule{{Match: "bee", Text: "answer to bee"}}}, 1)
	got := failBeforeQueued(t, r, g)
	if got.Text != "answer to bee" || got.Repeat {
		t.Errorf("the queued message: %+v", got)
	}
	ev := readEvents(t, r, "t")
	if types(ev) != "mma" || idsOf(ev, "b") != 1 || ev[2].Seq != got.Seq {
		t.Errorf("events %q", types(ev))
	}
}

// A message a turn took and wrote before failing is answered by a turn of
// its own, which goes on from the conversation: it is not told the other
// turn's error.
func TestTakenByFailedTurn(t *testing.T) {
	r, g := gateFail(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "bee", Text: "answer to bee"},
		{Match: "alpha", Results: "no", Calls: []scripted.Call{{Name: "web__count", Args: `{"text":"a"}`}}},
	}}, 2)
	// The answer to alpha calls web__count; bee is taken before the next
	// call, which fails.
	got := failBeforeQueued(t, r, g)
	if got.Text != "answer to bee" {
		t.Errorf("the taken message: %+v", got)
	}
	ev := readEvents(t, r, "t")
	if types(ev) != "marma" || idsOf(ev, "b") != 1 || ev[4].Seq != got.Seq {
		t.Errorf("events %q", types(ev))
	}
	// a's retry is told the answer after it.
	if again, err := r.Message(context.Background(), "t", Message{ID: "a", Text: "alpha"}, nil); err != nil || !again.Repeat || again.Seq != got.Seq {
		t.Errorf("a's retry: %+v %v", again, err)
	}
	if g.sent() != 3 {
		t.Errorf("the model was asked %d times, want 3", g.sent())
	}
}

// A conversation of fewer than 32 events keeps no id index file: its ids
// are kept in memory with the warm conversation, and read from its events
// by a turn that takes it cold; a retry is found either way. The message
// that brings it to 32 makes the file, holding every id, kept open between
// turns, its header lagging what it holds.
func TestIDsOfASmallConversation(t *testing.T) {
	r, m, _ := countRunner(t, nil)
	ctx := context.Background()
	dir, _ := r.Agent.Path(home.Chat, "t")
	index := filepath.Join(dir, idempotency.IndexFile)
	first, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	retry := func(when string) {
		t.Helper()
		asked := len(m.Requests())
		if a, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil); err != nil || !a.Repeat || a.Seq != first.Seq || len(m.Requests()) != asked {
			t.Errorf("a retry %s: %+v %v", when, a, err)
		}
	}
	retry("kept warm")
	r.Warm.Release()
	retry("taken cold")
	if _, err := os.Stat(index); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a conversation of two events has an id index file: %v", err)
	}
	for i := 2; i <= 15; i++ { // through seq 30
		if _, err := r.Message(ctx, "t", Message{ID: fmt.Sprintf("m-%d", i), Text: "more"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(index); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a conversation of 30 events has an id index file: %v", err)
	}
	if _, err := r.Message(ctx, "t", Message{ID: "m-16", Text: "more"}, nil); err != nil {
		t.Fatal(err)
	}
	x, err := idempotency.OpenIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i := 1; i <= 16; i++ {
		if seqs, err := x.Find(fmt.Sprintf("m-%d", i)); err != nil || !slices.Contains(seqs, int64(2*i-1)) {
			t.Errorf("the index made at 32 events finds m-%d at %v %v, want seq %d", i, seqs, err, 2*i-1)
		}
	}
	retry("once the index is made")
	r.Warm.Release()
	retry("once the index is made, taken cold")
}

// A conversation whose index was removed has it made again from the
// events: a retry is still found.
func TestIDIndexRemade(t *testing.T) {
	r, m, _ := countRunner(t, nil)
	ctx := context.Background()
	first, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // past the 32 events a conversation holds before its index is made
		if _, err := r.Message(ctx, "t", Message{ID: fmt.Sprintf("m-%d", i+2), Text: "more"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir, _ := r.Agent.Path(home.Chat, "t")
	if err := os.Remove(filepath.Join(dir, idempotency.IndexFile)); err != nil {
		t.Fatal(err)
	}
	asked := len(m.Requests())
	if a, err := r.Message(ctx, "t", Message{ID: "m-1", Text: "hello"}, nil); err != nil || !a.Repeat || a.Seq != first.Seq || len(m.Requests()) != asked {
		t.Errorf("a retry once the index was removed: %+v %v", a, err)
	}
}

// A retry goes on with the rounds its message has left: the rounds the
// failed turns spent count, so a message whose turns keep failing is never
// given every round again. Six rounds spent leave two, then the call told
// to call nothing; eight leave that call alone.
func TestRetryCountsRoundsSpent(t *testing.T) {
	for _, spent := range []int{MaxRounds - 2, MaxRounds} {
		t.Run(fmt.Sprintf("spent=%d", spent), func(t *testing.T) {
			r, m := webRunner(t, loopScript)
			dir, _ := r.Agent.Path(home.Chat, "t")
			os.MkdirAll(dir, 0o700)
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			evs := []event.Event{{Thread: "t", Type: event.TypeMessage, ID: "m1", Text: "loop forever"}}
			for i := range spent {
				id := fmt.Sprintf("c%d", i)
				evs = append(evs,
					event.Event{Type: event.TypeAnswer, Text: "again", Calls: []event.Call{{ID: id, Name: "web__echo", Args: []byte(`{"text":"x"}`)}}},
					event.Event{Type: event.TypeResult, CallID: id, Name: "web__echo", Text: "echo: x"})
			}
			var buf []byte
			for i := range evs {
				evs[i].Seq, evs[i].Time = int64(i+1), at
				buf = append(event.Append(buf, &evs[i]), '\n')
			}
			if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), buf, 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := r.Message(context.Background(), "t", Message{ID: "m1", Text: "loop forever"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if reqs := checkLastRound(t, r, m, a); len(reqs) != MaxRounds-spent+1 {
				t.Errorf("%d model calls; want %d", len(reqs), MaxRounds-spent+1)
			}
		})
	}
}
