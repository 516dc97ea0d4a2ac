package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/tools/npmtest"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// endWhen calls r.End on thread once at is closed, and returns what it got.
func endWhen(t *testing.T, r *Runner, thread string, at <-chan struct{}) <-chan Answer {
	t.Helper()
	out := make(chan Answer, 1)
	go func() {
		<-at
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		a, err := r.End(ctx, thread)
		if err != nil {
			t.Errorf("end: %v", err)
		}
		out <- a
	}()
	return out
}

// End ends a running turn whether it waits on the model or on a tool: the
// turn answers with what it had, marked ended (the model's words so far,
// or ending.Text after the cancelled call's result), End and the turn's
// caller are told that answer, and the next message is answered.
func TestEndEndsTurn(t *testing.T) {
	for _, where := range []string{"model", "tool"} {
		t.Run(where, func(t *testing.T) {
			sc := parseScript(t, hangScript)
			sc.Rules = append(sc.Rules, scripted.Rule{Match: "stall", Text: "an answer that stops", Chunks: 4, Stall: true, AfterChunks: 1})
			called := make(chan struct{}, 1)
			r, _ := toolRunner(t, sc, tools.Server{Name: "slow", URL: hangServer(t, called)})
			at := make(chan struct{})
			var once sync.Once
			text := "stall"
			var onText func(string)
			if where == "model" {
				onText = func(string) { once.Do(func() { close(at) }) } // the model is streaming
			} else {
				text = "hang"
				go func() { <-called; close(at) }() // the tool was called
			}
			ended := endWhen(t, r, "t", at)
			a, err := message(t, r, "t", Message{ID: "m1", Text: text}, onText)
			if err != nil || !a.Ended {
				t.Fatalf("the ended turn: %+v, %v; want an answer marked ended", a, err)
			}
			if e := <-ended; e != a {
				t.Errorf("end told %+v, the caller %+v", e, a)
			}
			evs := readEvents(t, r, "t")
			last := evs[len(evs)-1]
			if !ending.Marked(&last) || last.Seq != a.Seq || last.Text != a.Text {
				t.Fatalf("last event %+v, want the ended answer %+v", last, a)
			}
			switch where {
			case "model":
				if a.Text == "" || !strings.HasPrefix("an answer that stops", a.Text) || a.Text == "an answer that stops" {
					t.Errorf("ended answer %q, want the part the model said", a.Text)
				}
			case "tool":
				res := ofType(evs, event.TypeResult)
				if a.Text != ending.Text || len(res) != 1 || !strings.Contains(res[0].Error, "was ended before the tool answered") {
					t.Errorf("ended answer %q, results %+v", a.Text, res)
				}
			}
			if got := r.Metrics.Ops(metrics.OpEnd); got != 1 {
				t.Errorf("ends counted %d, want 1", got)
			}
			b, err := message(t, r, "t", Message{ID: "m2", Text: "hello"}, nil)
			if err != nil || b.Text != "hi" || b.Ended {
				t.Fatalf("the next message: %+v, %v", b, err)
			}
			// The same id again is told the ended answer, not run again.
			if c, err := message(t, r, "t", Message{ID: "m1", Text: text}, nil); err != nil || !c.Repeat || !c.Ended || c.Seq != a.Seq {
				t.Errorf("m1 again: %+v, %v; want the ended answer repeated", c, err)
			}
		})
	}
}

// With no turn running, End says so and writes nothing.
func TestEndNoTurn(t *testing.T) {
	r, _ := newRunner(t, nil)
	if _, err := r.End(context.Background(), "t"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("end of a conversation never spoken in: %v, want %v", err, ErrNotRunning)
	}
	if _, err := r.Message(context.Background(), "t", Message{Text: "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	before := readEvents(t, r, "t")
	if _, err := r.End(context.Background(), "t"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("end of an idle conversation: %v, want %v", err, ErrNotRunning)
	}
	if after := readEvents(t, r, "t"); len(after) != len(before) {
		t.Errorf("events %d after the end, %d before", len(after), len(before))
	}
	if got := r.Metrics.Ops(metrics.OpEnd); got != 0 {
		t.Errorf("ends counted %d, want 0", got)
	}
}

// checkWhole checks that a conversation is whole: seqs 1… without a gap,
// each message's turn a run of answers with calls each followed by a
// result per call, closed by an answer calling nothing; an ended answer
// only ever closes a turn.
func checkWhole(t *testing.T, evs []event.Event) (ended int) {
	t.Helper()
	var open map[string]bool
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		switch e.Type {
		case event.TypeMessage:
			if len(open) != 0 {
				t.Fatalf("seq %d: a message while calls %v are unanswered", e.Seq, open)
			}
			if i > 0 && evs[i-1].Type != event.TypeAnswer {
				t.Fatalf("seq %d: a message after a %s, not an answer", e.Seq, evs[i-1].Type)
			}
		case event.TypeAnswer:
			if len(open) != 0 {
				t.Fatalf("seq %d: an answer while calls %v are unanswered", e.Seq, open)
			}
			open = map[string]bool{}
			for _, c := range e.Calls {
				open[c.ID] = true
			}
			if ending.Marked(&e) {
				ended++
				if len(e.Calls) != 0 || e.Text == "" {
					t.Fatalf("seq %d: an ended answer %+v", e.Seq, e)
				}
			}
		case event.TypeResult:
			if !open[e.CallID] {
				t.Fatalf("seq %d: a result of call %q not open", e.Seq, e.CallID)
			}
			delete(open, e.CallID)
		}
	}
	if n := len(evs); n > 0 && evs[n-1].Type != event.TypeAnswer {
		t.Fatalf("the conversation ends with a %s", evs[n-1].Type)
	}
	return ended
}

// 100 ends racing 100 turns, each sent at a random point of its turn
// (before it, while the model streams, while a tool runs, after it): no
// conversation is torn, each turn is answered, and the ended answers
// written are the ends told so. LNK_TEST_SEED replays a run.
func TestEndRacesTurns(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LNK_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (LNK_TEST_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	sc := parseScript(t, `
[[rule]]
match = "tool"
results = "no"
text = "calling"
[[rule.call]]
name = "slow__hang"
[[rule]]
match = "tool"
results = "yes"
text = "done with the tool"
[[rule]]
match = "any"
text = "a streamed answer in several pieces"
chunks = 6
`)
	called := make(chan struct{}, 100)
	r, _ := toolRunner(t, sc, tools.Server{Name: "slow", URL: hangServer(t, called), Timeout: 2 * time.Second})
	told := 0
	for i := range 100 {
		kind := rng.IntN(4) // 0 before the turn, 1 while the model streams, 2 while the tool runs, 3 a racing end
		text := "talk " + strconv.Itoa(i)
		if kind == 2 {
			text = "tool " + strconv.Itoa(i)
		}
		at := make(chan struct{})
		var once sync.Once
		onText := func(string) {
			if kind == 1 {
				once.Do(func() { close(at) })
			}
		}
		switch kind {
		case 0, 3:
			close(at)
		case 2:
			go func() { <-called; close(at) }()
		}
		ended := make(chan Answer, 1)
		go func() {
			<-at
			a, err := r.End(context.Background(), "t")
			if err != nil && !errors.Is(err, ErrNotRunning) {
				t.Errorf("end %d: %v", i, err)
			}
			ended <- a
		}()
		a, err := message(t, r, "t", Message{ID: "m" + strconv.Itoa(i), Text: text}, onText)
		if err != nil && !errors.Is(err, ErrEnded) {
			t.Fatalf("turn %d (kind %d): %v", i, kind, err)
		}
		e := <-ended
		if e.Ended {
			told++
			if e != a {
				t.Errorf("turn %d: end told %+v, the caller %+v", i, e, a)
			}
		}
		if kind == 2 && !a.Ended { // the tool never answers: only the end or its limit ends it
			if a.Text != "done with the tool" {
				t.Errorf("turn %d: %+v", i, a)
			}
		}
		if t.Failed() {
			return
		}
	}
	if ended := checkWhole(t, readEvents(t, r, "t")); ended != told {
		t.Errorf("%d ended answers written, %d ends told one", ended, told)
	}
	if got := r.Metrics.Ops(metrics.OpEnd); got != uint64(told) {
		t.Errorf("ends counted %d, told %d", got, told)
	}
}

// callRecorder is a reverse proxy in front of a real MCP server that says when
// a call of tool is sent and when a notifications/cancelled naming it is.
type callRecorder struct {
	tool      string
	called    chan struct{}
	cancelled chan struct{}

	mu  sync.Mutex
	ids map[string]bool // the JSON-RPC ids of the calls of tool
}

func (rec *callRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil {
		rec.mu.Lock()
		switch {
		case msg.Method == "tools/call" && msg.Params.Name == rec.tool:
			rec.ids[string(msg.ID)] = true
			rec.called <- struct{}{}
		case msg.Method == "notifications/cancelled" && rec.ids[string(msg.Params.RequestID)]:
			rec.cancelled <- struct{}{}
		}
		rec.mu.Unlock()
	}
	next.ServeHTTP(w, r)
}

// A turn in a loop of tool calls on server-everything, a real MCP server,
// ended while its long-running operation runs: the call is cancelled on
// the server (a notifications/cancelled naming it reaches it), the turn
// writes its answer marked ended, and the next message is answered.
func TestEndCancelsEverythingCall(t *testing.T) {
	addr := npmtest.Everything(t, "streamableHttp")
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host}) }, // Host too: the server checks it
		FlushInterval: -1,
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	rec := &callRecorder{tool: "trigger-long-running-operation", called: make(chan struct{}, 10), cancelled: make(chan struct{}, 10), ids: map[string]bool{}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.ServeHTTP(w, r, proxy) }))
	t.Cleanup(front.Close)
	// The first round calls echo nine times at once; each round after it
	// starts an operation of a minute, which only the end stops.
	script := `
[[rule]]
match = "hello"
text = "hi"
[[rule]]
match = "loop"
results = "no"
`
	for range 9 {
		script += "[[rule.call]]\nname = \"everything__echo\"\nargs = '{\"message\":\"round one\"}'\n"
	}
	script += `
[[rule]]
match = "loop"
results = "yes"
[[rule.call]]
name = "everything__trigger-long-running-operation"
args = '{"duration":60,"steps":60}'
`
	r, m := toolRunner(t, parseScript(t, script), tools.Server{Name: "everything", URL: front.URL + u.Path})
	defer func() {
		if t.Failed() {
			for _, q := range m.Requests() {
				t.Logf("request: %.3000s", q)
			}
		}
	}()
	ended := endWhen(t, r, "t", rec.called)
	a, err := message(t, r, "t", Message{ID: "m1", Text: "loop"}, nil)
	if err != nil || !a.Ended || a.Text != ending.Text {
		t.Fatalf("the ended turn: %+v, %v", a, err)
	}
	<-ended
	select {
	case <-rec.cancelled:
	case <-time.After(guard):
		t.Fatal("no notifications/cancelled reached the server for the long-running call")
	}
	evs := readEvents(t, r, "t")
	checkWhole(t, evs)
	res := ofType(evs, event.TypeResult)
	if len(res) != 10 || !strings.Contains(res[9].Error, "was ended before the tool answered") {
		t.Errorf("results %+v, want nine echoes and the cancelled operation", res)
	}
	if b, err := message(t, r, "t", Message{ID: "m2", Text: "hello"}, nil); err != nil || b.Text != "hi" {
		t.Fatalf("the next message: %+v, %v", b, err)
	}
}
