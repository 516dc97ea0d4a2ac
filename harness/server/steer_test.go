package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
)

// withWeb gives the fixture's agent the tool web, a real MCP server over
// streamable HTTP: echo, slow (200 ms) and sum. Each call of slow sends on
// started, when it is not nil, as it starts.
func withWeb(t *testing.T, started chan<- struct{}) func(*turn.Runner) {
	s := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	text := func(s string) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if s == "slow" {
				select {
				case started <- struct{}{}:
				default: // nil, or nobody waits for this one
				}
				// A slow tool: the window in which a message steers the
				// turn while tools run, the behaviour under test.
				time.Sleep(200 * time.Millisecond) // a slow tool, the behaviour under test
			}
			return mcp.NewToolResultText(s), nil
		}
	}
	for _, name := range []string{"echo", "slow", "sum"} {
		s.AddTool(mcp.NewTool(name), text(name))
	}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return func(r *turn.Runner) {
		r.Tools = tools.New(r.Agent, []tools.Server{{Name: "web", URL: ts.URL}}, tools.Options{})
		t.Cleanup(r.Tools.Close)
	}
}

// offered is the names of the tools the model's last request offered.
func offered(t *testing.T, m *scripted.Server) []string {
	t.Helper()
	reqs := m.Requests()
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1], &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// A subagent narrowed over HTTP (Link-Tools) to two tools is offered
// exactly those two; a wider later list, and none, change nothing; another
// conversation has every tool.
func TestLinkTools(t *testing.T) {
	f := newFixture(t, nil, withWeb(t, nil))
	path := "/v1/agents/ada/chats/sub:1/messages"
	want := []string{"web__echo", "web__sum"}
	for _, c := range []struct {
		name string
		hdr  []string
	}{
		{"narrowed to two", []string{"Link-Tools", "web__sum, web__echo"}},
		{"a wider list", []string{"Link-Tools", "web"}},
		{"every name", []string{"Link-Tools", "web__echo web__slow web__sum"}},
		{"no list", nil},
	} {
		if code, body := f.post(t, path, key, `{"text":"`+c.name+`"}`, c.hdr...); code != 200 {
			t.Fatalf("%s: %d %s", c.name, code, body)
		}
		if got := offered(t, f.model); !slices.Equal(got, want) {
			t.Fatalf("%s: offered %v, want %v", c.name, got, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(f.home, chatFile("sub:1", "tools.json")))
	if err != nil || !strings.Contains(string(b), "web__echo") || strings.Contains(string(b), "web__slow") {
		t.Errorf("tools.json: %s %v", b, err)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/main/messages", key, `{"text":"hi"}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if got := offered(t, f.model); len(got) != 3 {
		t.Errorf("another conversation: offered %v, want every tool", got)
	}
}

// post in the background.
func (f *fixture) postLater(t *testing.T, path, body string) <-chan answerBody {
	ch := make(chan answerBody, 1)
	go func() {
		code, b := f.post(t, path, key, body)
		var a answerBody
		if code != 200 || json.Unmarshal([]byte(b), &a) != nil {
			t.Errorf("%s: %d %s", body, code, b)
		}
		ch <- a
	}()
	return ch
}

// Over HTTP, a message sent while its conversation's turn runs steers it:
// sent while the model answers, it is answered in the same turn after the
// first, each caller told its own answer; sent while tools run, both
// callers are told the one answer, the later's marked shared.
func TestSteerOverHTTP(t *testing.T) {
	sc, err := scripted.ParseScript([]byte(`
[[rule]]
match = "first"
text = "first answer"
latency_ms = 300 # a slow model: the window in which a message steers the turn
[[rule]]
match = "second"
text = "second answer"
[[rule]]
match = "slow"
results = "no"
[[rule.call]]
name = "web__slow"
[[rule]]
match = "slow"
results = "yes"
text = "slow answer"
`))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	f := newFixture(t, sc, withWeb(t, started))
	path := "/v1/agents/ada/chats/telegram:7/messages"
	first := f.postLater(t, path, `{"id":"1","text":"the first"}`)
	<-f.asked
	second := f.postLater(t, path, `{"id":"2","text":"the second"}`)
	a1, a2 := <-first, <-second
	if a1.Seq != 2 || a1.Text != "first answer" || a1.Shared || a2.Seq != 4 || a2.Text != "second answer" || a2.Shared {
		t.Fatalf("told %+v and %+v", a1, a2)
	}

	third := f.postLater(t, path, `{"id":"3","text":"go slow"}`)
	<-started // the tools are running
	fourth := f.postLater(t, path, `{"id":"4","text":"slow again"}`)
	a3, a4 := <-third, <-fourth
	if a3.Seq != a4.Seq || a3.Text != "slow answer" || a3.Shared || !a4.Shared {
		t.Fatalf("told %+v and %+v", a3, a4)
	}
	b, _ := os.ReadFile(filepath.Join(f.home, chatFile("telegram:7", "events.jsonl")))
	if lines := strings.Count(string(b), "\n"); int64(lines) != a4.Seq {
		t.Errorf("%d events, the last answer %d:\n%s", lines, a4.Seq, b)
	}
}
