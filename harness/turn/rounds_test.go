package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/tools/npmtest"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// slowCall is how long web__slow takes.
const slowCall = 300 * time.Millisecond

// meetCalls is how many calls of web__meet come before any returns.
const meetCalls = 3

// webServer is a real MCP server over streamable HTTP counting its
// initialize requests: echo, slow (slowCall), big (100 KiB).
func webServer(t testing.TB) (string, *atomic.Int64) {
	t.Helper()
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false), server.WithInstructions("Web fetches pages."))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + r.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("slow", mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(slowCall): // a slow tool: the behaviour offered
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("slow: " + r.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("big"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("x", 100<<10)), nil
	})
	var inits atomic.Int64
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			if bytes.Contains(b.Bytes(), []byte(`"method":"initialize"`)) {
				inits.Add(1)
			}
			r.Body = http.NoBody
			r.Body = readBody{bytes.NewReader(b.Bytes())}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, &inits
}

// meetServer is a real MCP server over streamable HTTP with one tool,
// meet, whose calls each return only once meetCalls calls of it have come.
func meetServer(t testing.TB) string {
	t.Helper()
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	var met atomic.Int64
	all := make(chan struct{})
	s.AddTool(mcp.NewTool("meet", mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if met.Add(1) == meetCalls {
			close(all)
		}
		select {
		case <-all:
			return mcp.NewToolResultText("met: " + r.GetString("text", "")), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL
}

type readBody struct{ *bytes.Reader }

func (readBody) Close() error { return nil }

// toolRunner is a runner whose agent has the tools of servers.
func toolRunner(t *testing.T, script *scripted.Script, servers ...tools.Server) (*Runner, *scripted.Server) {
	t.Helper()
	r, m := newRunner(t, script)
	r.Tools = tools.New(r.Agent, servers, tools.Options{})
	t.Cleanup(r.Tools.Close)
	return r, m
}

func parseScript(t *testing.T, s string) *scripted.Script {
	t.Helper()
	sc, err := scripted.ParseScript([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// loopScript is a model that, asked to loop, answers "again" and calls
// web__echo, every round it is let.
const loopScript = `
[[rule]]
match = "loop"
text = "again"
[[rule.call]]
name = "web__echo"
args = '{"text":"x"}'
`

// webRunner is a runner whose model is scripted by script, its tools
// those of webServer.
func webRunner(t *testing.T, script string) (*Runner, *scripted.Server) {
	t.Helper()
	web, _ := webServer(t)
	return toolRunner(t, parseScript(t, script), tools.Server{Name: "web", URL: web})
}

// readEvents reads a conversation's events.
func readEvents(t *testing.T, r *Runner, thread string) []event.Event {
	t.Helper()
	return scanEvents(t, r, thread, 1, store.Forward, -1)
}

// scanEvents reads at most n of a conversation's events (every one when n
// is negative) from seq from in direction d, in the order read.
func scanEvents(t *testing.T, r *Runner, thread string, from int64, d store.Direction, n int) []event.Event {
	t.Helper()
	conv, err := r.Conversation(thread)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var out []event.Event
	var dec event.Decoder
	err = conv.Read(context.Background(), from, d, func(_ int64, b []byte) bool {
		var e event.Event
		if err := dec.Decode(bytes.Clone(b), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		return len(out) != n
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ofType(events []event.Event, typ string) []event.Event {
	var out []event.Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// requestTools is the names of the tools a request to the model offered.
func requestTools(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Name+tl.Function.Name)
	}
	return out
}

// Three calls in one round run at once: each of web__meet's returns only
// once all three have come, so calls run one after another would never
// return (each is given up after a minute, and the test fails). Each
// answer is an event of its own.
func TestRoundRunsCallsAtOnce(t *testing.T) {
	web := meetServer(t)
	r, _ := newRunner(t, parseScript(t, `
[[rule]]
match = "three"
results = "no"
[[rule.call]]
name = "web__meet"
args = '{"text":"a"}'
[[rule.call]]
name = "web__meet"
args = '{"text":"b"}'
[[rule.call]]
name = "web__meet"
args = '{"text":"c"}'
[[rule]]
match = "three"
results = "yes"
text = "all three came back"
`))
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "web", URL: web}}, tools.Options{Call: time.Minute})
	t.Cleanup(r.Tools.Close)
	a, err := r.Message(context.Background(), "t", Message{Text: "three at once"}, nil)
	if err != nil || a.Text != "all three came back" {
		t.Fatalf("%+v %v", a, err)
	}
	ev := readEvents(t, r, "t")
	res := ofType(ev, event.TypeResult)
	if len(res) != 3 || len(ofType(ev, event.TypeAnswer)) != 2 {
		t.Fatalf("events %+v", ev)
	}
	for _, e := range res {
		if !strings.HasPrefix(e.Text, "met: ") || e.Error != "" {
			t.Errorf("result %+v: the calls did not run at once", e)
		}
	}
}

// A model that calls a tool every round gets eight rounds, and is then
// asked once more, told to call nothing; a call it makes anyway is not run.
func TestEightRounds(t *testing.T) {
	r, m := webRunner(t, loopScript)
	a, err := r.Message(context.Background(), "t", Message{Text: "loop forever"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkLastRound(t, r, m, a)
}

// checkLastRound checks the turn told a in conversation t ran MaxRounds
// rounds and then answered calling nothing, the model's last request
// telling it to call nothing, and returns the model's requests.
func checkLastRound(t *testing.T, r *Runner, m *scripted.Server, a Answer) [][]byte {
	t.Helper()
	ev := readEvents(t, r, "t")
	answers := ofType(ev, event.TypeAnswer)
	if n := len(ofType(ev, event.TypeResult)); n != MaxRounds {
		t.Errorf("%d results, want %d", n, MaxRounds)
	}
	if len(answers) != MaxRounds+1 || len(answers[MaxRounds].Calls) != 0 || a.Seq != answers[MaxRounds].Seq {
		t.Fatalf("answers %+v, the turn's %+v", answers, a)
	}
	reqs := m.Requests()
	if last := string(reqs[len(reqs)-1]); !strings.Contains(last, "call no tool") {
		t.Errorf("the last request did not say to call nothing: %s", last)
	}
	return reqs
}

// An answer of 100 KiB is kept as 32 KiB and marked cut; a call to a tool
// the conversation wasn't offered is answered as one there isn't.
func TestResultCutAndNoSuchTool(t *testing.T) {
	r, _ := webRunner(t, `
[[rule]]
match = "big"
results = "no"
[[rule.call]]
name = "web__big"
[[rule.call]]
name = "shell__rm"
args = '{"path":"/"}'
[[rule]]
match = "big"
results = "yes"
text = "read it"
`)
	if _, err := r.Message(context.Background(), "t", Message{Text: "big one"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range ofType(readEvents(t, r, "t"), event.TypeResult) {
		switch e.Name {
		case "web__big":
			if len(e.Text) != tools.MaxResultBytes || !e.Truncated {
				t.Errorf("big: %d bytes, truncated %v", len(e.Text), e.Truncated)
			}
		case "shell__rm":
			if !strings.Contains(e.Error, "no tool named shell__rm") {
				t.Errorf("not offered: %+v", e)
			}
		}
	}
}

// A subagent narrowed to two tools is offered exactly those two, and a
// wider later list changes nothing; the list is kept in tools.json.
func TestNarrowed(t *testing.T) {
	web, _ := webServer(t)
	r, m := toolRunner(t, nil, tools.Server{Name: "web", URL: web})
	ctx := context.Background()
	if _, err := r.Message(ctx, "sub", Message{Text: "one", Tools: []string{"web__slow", "web__echo"}}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"web__echo", "web__slow"}
	if got := requestTools(t, m.Requests()[len(m.Requests())-1]); !slices.Equal(got, want) {
		t.Fatalf("narrowed: offered %v, want %v", got, want)
	}
	if _, err := r.Message(ctx, "sub", Message{Text: "two", Tools: []string{"web"}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := requestTools(t, m.Requests()[len(m.Requests())-1]); !slices.Equal(got, want) {
		t.Fatalf("a wider list widened: offered %v, want %v", got, want)
	}
	if _, err := r.Message(ctx, "sub", Message{Text: "three"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := requestTools(t, m.Requests()[len(m.Requests())-1]); !slices.Equal(got, want) {
		t.Fatalf("no list: offered %v, want %v", got, want)
	}
	if _, err := r.Message(ctx, "main", Message{Text: "four"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := requestTools(t, m.Requests()[len(m.Requests())-1]); len(got) != 3 {
		t.Errorf("another conversation: offered %v, want every tool", got)
	}
}

// A conversation kept warm with no tools.json, its next turn not looking
// for one, is narrowed all the same once another runner's turn (another
// process's) narrowed it: that turn appended to the conversation, so the
// next here composes afresh and reads the list.
func TestNarrowedElsewhereWhileWarm(t *testing.T) {
	web, _ := webServer(t)
	web2 := tools.Server{Name: "web", URL: web}
	r, m := toolRunner(t, nil, web2)
	other := &Runner{Agent: r.Agent, Getenv: r.Getenv, HTTP: r.HTTP, Metrics: r.Metrics, Open: r.Open,
		Tools: tools.New(r.Agent, []tools.Server{web2}, tools.Options{}), Process: Process{Warm: &warm.Cache{}}}
	t.Cleanup(other.Tools.Close)
	ctx := context.Background()
	offered := func(by *Runner, text string, narrow []string) []string {
		t.Helper()
		if _, err := by.Message(ctx, "main", Message{Text: text, Tools: narrow}, nil); err != nil {
			t.Fatal(err)
		}
		return requestTools(t, m.Requests()[len(m.Requests())-1])
	}
	for _, text := range []string{"one", "two"} { // the second warm, with no tools.json
		if got := offered(r, text, nil); len(got) != 3 {
			t.Fatalf("%s: offered %v, want every tool", text, got)
		}
	}
	want := []string{"web__echo"}
	if got := offered(other, "narrowed there", want); !slices.Equal(got, want) {
		t.Fatalf("narrowed by the other runner: offered %v, want %v", got, want)
	}
	if got := offered(r, "three", nil); !slices.Equal(got, want) {
		t.Fatalf("the warm runner after: offered %v, want %v", got, want)
	}
}

// A turn that never calls a tool starts no session once the lists are
// known; a restart with the tool down offers the same tools and the same
// prompt bytes, from tool-lists.json.
func TestRestartToolDown(t *testing.T) {
	s := server.NewMCPServer("web", "1", server.WithInstructions("Web fetches pages."))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("e"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	defer ts.Close()
	r, m := toolRunner(t, nil, tools.Server{Name: "web", URL: ts.URL})
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{Text: "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	first := m.Requests()[len(m.Requests())-1]
	ts.Close()

	r2, m2 := toolRunner(t, nil, tools.Server{Name: "web", URL: ts.URL}) // a new process
	r2.Agent = r.Agent
	r2.Tools = tools.New(r.Agent, []tools.Server{{Name: "web", URL: ts.URL}}, tools.Options{})
	defer r2.Tools.Close()
	if _, err := r2.Message(ctx, "u", Message{Text: "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	second := m2.Requests()[len(m2.Requests())-1]
	for _, key := range []string{"system", "tools"} {
		a, b := field(t, first, key), field(t, second, key)
		if !bytes.Equal(a, b) || len(a) < 10 {
			t.Errorf("%s changed with the tool down:\n%s\n%s", key, a, b)
		}
	}
	if !bytes.Contains(field(t, second, "system"), []byte("Web fetches pages.")) {
		t.Errorf("the tools section lost web's instructions: %s", field(t, second, "system"))
	}
}

func field(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

// A message from run:<id> (a background command's end) says so in its head.
func TestBackgroundEndHead(t *testing.T) {
	r, _ := newRunner(t, nil)
	if _, err := r.Message(context.Background(), "t", Message{Text: "exit 0", From: event.Sender{ID: "run:42"}, Connection: "run"}, nil); err != nil {
		t.Fatal(err)
	}
	if h := readEvents(t, r, "t")[0].Head; !strings.Contains(h, "run:42, the end of a command you started in the background") {
		t.Errorf("head %q", h)
	}
}

// With no tools offered, earlier calls and answers go to the model as text.
func TestToolsGoneAsText(t *testing.T) {
	r, m := webRunner(t, `
[[rule]]
match = "echo"
results = "no"
[[rule.call]]
name = "web__echo"
args = '{"text":"hi"}'
[[rule]]
match = "echo"
results = "yes"
text = "heard"
`)
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{Text: "echo please"}, nil); err != nil {
		t.Fatal(err)
	}
	r.Tools = nil // the tools gone
	if _, err := r.Message(ctx, "t", Message{Text: "and now?"}, nil); err != nil {
		t.Fatal(err)
	}
	last := string(m.Requests()[len(m.Requests())-1])
	if strings.Contains(last, "tool_use") || strings.Contains(last, "tool_result") || !strings.Contains(last, `[called web__echo {\"text\":\"hi\"}]`) || !strings.Contains(last, "echo: hi") {
		t.Errorf("calls not as text: %s", last)
	}
}

// server-everything, written by others, through whole turns over both
// transports: its instructions reach the tools section, echo and get-sum
// are called and answered.
func TestEverythingTurn(t *testing.T) {
	for _, transport := range []string{"streamableHttp", "sse"} {
		t.Run(transport, func(t *testing.T) {
			addr := npmtest.Everything(t, transport)
			r, m := toolRunner(t, parseScript(t, `
[[rule]]
match = "sum"
results = "no"
[[rule.call]]
name = "everything__echo"
args = '{"message":"hello from the turn"}'
[[rule.call]]
name = "everything__get-sum"
args = '{"a":2,"b":40}'
[[rule]]
match = "sum"
results = "yes"
text = "done"
`), tools.Server{Name: "everything", URL: addr})
			a, err := r.Message(context.Background(), "t", Message{Text: "echo and sum"}, nil)
			if err != nil || a.Text != "done" {
				t.Fatalf("%+v %v", a, err)
			}
			var texts []string
			for _, e := range ofType(readEvents(t, r, "t"), event.TypeResult) {
				if e.Error != "" {
					t.Errorf("%s: %s", e.Name, e.Error)
				}
				texts = append(texts, e.Text)
			}
			all := strings.Join(texts, "\n")
			if !strings.Contains(all, "hello from the turn") || !strings.Contains(all, "42") {
				t.Errorf("results %q", texts)
			}
			first := m.Requests()[0]
			// Its instructions (docs/instructions.md in the package) open so.
			if !bytes.Contains(field(t, first, "system"), []byte("Everything Server – Server Instructions")) {
				t.Errorf("server-everything's instructions are not in the prompt: %s", field(t, first, "system"))
			}
		})
	}
}

// A kept memory session is one for every turn and conversation of the
// agent; a turn that calls no tool starts none, once the lists are known.
func TestKeptMemorySession(t *testing.T) {
	mem, inits := webServer(t)
	script := parseScript(t, `
[[rule]]
match = "remember"
results = "no"
[[rule.call]]
name = "memory__echo"
args = '{"text":"m"}'
[[rule]]
match = "remember"
results = "yes"
text = "kept"
`)
	r, _ := toolRunner(t, script, tools.Server{Name: "memory", URL: mem})
	ctx := context.Background()
	for _, thread := range []string{"a", "b", "a", "c"} {
		if a, err := r.Message(ctx, thread, Message{Text: "remember this"}, nil); err != nil || a.Text != "kept" {
			t.Fatalf("%s: %+v %v", thread, a, err)
		}
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("memory saw %d initialize calls over four turns of three conversations, want 1", n)
	}
	r.Tools.Close()
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "memory", URL: mem}}, tools.Options{}) // a new process
	defer r.Tools.Close()
	if _, err := r.Message(ctx, "d", Message{Text: "just talk"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("a turn calling no tool started a session (%d initialize calls)", n)
	}
}
