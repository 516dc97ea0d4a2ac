package turn

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// guard bounds a test's wait in case the bound under test fails, far past
// the bound itself.
const guard = 20 * time.Second

// message sends m to thread in a goroutine and returns its outcome, or
// fails the test past guard.
func message(t *testing.T, r *Runner, thread string, m Message, onText func(string)) (Answer, error) {
	t.Helper()
	type outcome struct {
		a   Answer
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		a, err := r.Message(context.Background(), thread, m, onText)
		done <- outcome{a, err}
	}()
	select {
	case o := <-done:
		return o.a, o.err
	case <-time.After(guard):
		t.Fatalf("%q: no answer in %v", m.Text, guard)
	}
	return Answer{}, nil
}

// A model that keeps sending keep-alives, or trickles its answer, is ended
// by [model] timeout, the turn failing with an error that says so and the
// conversation left with its message unanswered; the next message is
// answered.
func TestModelTimeoutEndsTurn(t *testing.T) {
	s := withModel("anthropic/claude-opus-5-5", "")
	s.Model.Timeout = settings.Duration(time.Second)
	// The unanswered message is sent again with the next: hello comes first.
	r, _, _ := modelRunner(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "hello", Text: "hi"},
		{Match: "ping", Text: "never", Chunks: 3, Stall: true, AfterChunks: 1, PingMS: 10},
		{Match: "trickle", AnswerBytes: 4000, TrickleMS: 5},
	}}, s, map[string]string{"LNK_MODEL_STALL": "500ms"})
	for _, text := range []string{"ping", "trickle"} {
		_, err := message(t, r, text, Message{Text: text}, nil)
		if !errors.Is(err, model.ErrTimeout) || !strings.Contains(err.Error(), "in 1s") {
			t.Errorf("%s: error %v, want %v saying 1s", text, err, model.ErrTimeout)
		}
		lastIsMessage(t, r, text, 1, text)
		if a, err := message(t, r, text, Message{Text: "hello"}, nil); err != nil || a.Text != "hi" {
			t.Errorf("%s: the next message: %+v, %v", text, a, err)
		}
	}
}

// hangServer is a real MCP server over streamable HTTP whose one tool,
// hang, answers only once its call is cancelled. Each call is said on
// called, when not nil.
func hangServer(t *testing.T, called chan<- struct{}) string {
	s := server.NewMCPServer("slow", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("hang"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if called != nil {
			called <- struct{}{}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL
}

// hangScript: hello first, since an unanswered message is sent again with
// the next.
const hangScript = `
[[rule]]
match = "hello"
text = "hi"
[[rule]]
match = "hang"
results = "no"
[[rule.call]]
name = "slow__hang"
[[rule]]
match = "hang"
results = "yes"
text = "the tool did not answer"
`

// A tool that never answers is cut at its server's limit; the model is
// told so as the call's result, and the turn answers.
func TestHangingToolTurnAnswers(t *testing.T) {
	r, _ := toolRunner(t, parseScript(t, hangScript), tools.Server{Name: "slow", URL: hangServer(t, nil), Timeout: 300 * time.Millisecond})
	a, err := message(t, r, "t", Message{Text: "hang on"}, nil)
	if err != nil || a.Text != "the tool did not answer" {
		t.Fatalf("answer %+v, %v", a, err)
	}
	res := ofType(readEvents(t, r, "t"), event.TypeResult)
	if len(res) != 1 || !strings.Contains(res[0].Error, "did not answer in 300ms") {
		t.Errorf("results %+v, want one saying the tool did not answer in 300ms", res)
	}
}

// A Stop ends a running turn, whether it waits on the model or on a tool:
// the turn fails with ErrStopped, what it wrote stays, and the next
// message takes a turn of its own.
func TestStopEndsTurn(t *testing.T) {
	for _, where := range []string{"model", "tool"} {
		t.Run(where, func(t *testing.T) {
			sc := parseScript(t, hangScript)
			sc.Rules = append(sc.Rules, scripted.Rule{Match: "stall", Text: "an answer that stops", Chunks: 4, Stall: true, AfterChunks: 1})
			called := make(chan struct{}, 1)
			r, m := toolRunner(t, sc, tools.Server{Name: "slow", URL: hangServer(t, called)})
			stop, end := context.WithCancel(context.Background())
			defer end()
			r.Stop = stop
			text := "stall"
			var onText func(string)
			if where == "model" {
				onText = func(string) { end() } // the model is streaming: stop now
			} else {
				text = "hang"
				go func() { <-called; end() }() // the tool was called: stop now
			}
			_, err := message(t, r, "t", Message{ID: "m1", Text: text}, onText)
			if !errors.Is(err, ErrStopped) {
				t.Fatalf("error %v, want %v", err, ErrStopped)
			}
			r.Stop = nil // the process that comes next
			a, err := message(t, r, "t", Message{ID: "m2", Text: "hello"}, nil)
			if err != nil || a.Text != "hi" {
				t.Fatalf("the next message: %+v, %v", a, err)
			}
			if where == "tool" && !strings.Contains(lastRequest(t, m), prompt.Unanswered) {
				t.Errorf("the call the ended turn left was not sent as unanswered:\n%s", lastRequest(t, m))
			}
			evs := readEvents(t, r, "t")
			if evs[0].Type != event.TypeMessage || evs[0].Text != text || evs[len(evs)-1].Text != "hi" {
				t.Errorf("events %+v", evs)
			}
		})
	}
}
