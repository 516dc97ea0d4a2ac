package turn

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/home"
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

// withTurnTimeout writes a [turn] timeout of d into r's agent's settings.
func withTurnTimeout(t *testing.T, r *Runner, d time.Duration) {
	t.Helper()
	s := settings.Defaults()
	s.Turn.Timeout = settings.Duration(d)
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
}

// A turn is ended at [turn] timeout whatever it waits on, a tool whose
// own limit is far off or a model that said part of its answer and went
// quiet: the turn fails with ErrTimeout saying its time, what it had is
// written (the call's result saying why, the part of the answer said), and
// the next message is answered.
func TestTurnTimeoutEndsTurn(t *testing.T) {
	const limit = 2 * time.Second // past the model's first words and the tool's call, even on a loaded machine
	for _, where := range []string{"tool", "model"} {
		t.Run(where, func(t *testing.T) {
			sc := parseScript(t, hangScript)
			sc.Rules = append(sc.Rules, scripted.Rule{Match: "stall", Text: "an answer that stops", Chunks: 4, Stall: true, AfterChunks: 1})
			called := make(chan struct{}, 1)
			r, _ := toolRunner(t, sc, tools.Server{Name: "slow", URL: hangServer(t, called), Timeout: time.Hour})
			withTurnTimeout(t, r, limit)
			text := map[string]string{"tool": "hang on", "model": "stall"}[where]
			var streamed strings.Builder
			_, err := message(t, r, "t", Message{ID: "m1", Text: text}, func(frag string) { streamed.WriteString(frag) })
			if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "of 2s") {
				t.Fatalf("error %v, want %v saying 2s", err, ErrTimeout)
			}
			evs := readEvents(t, r, "t")
			last := evs[len(evs)-1]
			switch where {
			case "tool":
				if last.Type != event.TypeResult || !strings.Contains(last.Error, "ran past its time of 2s") {
					t.Errorf("the last event %+v, want the hanging call's result saying the turn's time", last)
				}
			case "model":
				if last.Type != event.TypeAnswer || last.Text == "" || last.Text != streamed.String() || len(last.Calls) != 0 {
					t.Errorf("the last event %+v, want the answer's part streamed, %q", last, streamed.String())
				}
			}
			a, err := message(t, r, "t", Message{ID: "m2", Text: "hello"}, nil)
			if err != nil || a.Text != "hi" {
				t.Fatalf("the next message: %+v, %v", a, err)
			}
		})
	}
}

// holdFolder takes the flock of thread's folder from an open file of its
// own, as another process's turn (or one stuck) would, and returns what
// lets it go.
func holdFolder(t *testing.T, r *Runner, thread string) (release func()) {
	t.Helper()
	dir, err := r.Agent.Path(home.Chat, thread)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { unix.Close(fd) }) }
	t.Cleanup(release)
	return release
}

// A turn whose conversation's folder is locked by another process's turn
// that never ends waits no longer than the turn's time: ErrBusy, nothing
// of the message written; once the lock is let go the message is
// answered. A caller that leaves ends the wait too.
func TestFolderLockWaitBounded(t *testing.T) {
	r, _ := newRunner(t, nil)
	withTurnTimeout(t, r, time.Second)
	release := holdFolder(t, r, "t")
	_, err := message(t, r, "t", Message{ID: "m1", Text: "hello"}, nil)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "ran past its time of 1s") {
		t.Fatalf("error %v, want %v saying the turn's time", err, ErrBusy)
	}
	dir, _ := r.Agent.Path(home.Chat, "t")
	if b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl")); len(b) != 0 {
		t.Errorf("the refused message was written:\n%s", b)
	}

	ctx, leave := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	go func() {
		_, err := r.Message(ctx, "t", Message{ID: "m1", Text: "hello"}, nil)
		waiting <- err
	}()
	leave()
	select {
	case err := <-waiting:
		if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrBusy) {
			t.Errorf("the caller that left: %v, want %v or %v", err, context.Canceled, ErrBusy)
		}
	case <-time.After(guard):
		t.Fatalf("a caller that left still waits on the folder after %v", guard)
	}

	release()
	if a, err := message(t, r, "t", Message{ID: "m1", Text: "hello"}, nil); err != nil || a.Text == "" {
		t.Fatalf("once let go: %+v, %v", a, err)
	}
}
