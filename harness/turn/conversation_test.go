package turn

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/memory"
)

// Each tool call of a turn says the turn's conversation to the tool server
// (the built-in memory server, on the session every conversation of the
// agent shares): its thread, and the agent.
func TestCallsSayTheTurnsConversation(t *testing.T) {
	r, _ := newRunner(t, parseScript(t, `
[[rule]]
match = "remember"
results = "no"
[[rule.call]]
name = "memory__remember"
args = '{"note":"tea"}'
[[rule]]
match = "remember"
results = "yes"
text = "Remembered."
`))
	var mu sync.Mutex
	var seen []tools.Conversation
	mem := httptest.NewServer(server.NewStreamableHTTPServer(memory.New(r.Agent.Dir, func(_ string, c tools.Conversation) {
		mu.Lock()
		seen = append(seen, c)
		mu.Unlock()
	})))
	t.Cleanup(mem.Close)
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "memory", URL: mem.URL}}, tools.Options{})
	t.Cleanup(r.Tools.Close)
	threads := []string{"web:1", "group:日本", "a b"}
	for _, thread := range threads {
		if a, err := r.Message(context.Background(), thread, Message{Text: "remember this"}, nil); err != nil || a.Text != "Remembered." {
			t.Fatalf("%s: %+v %v", thread, a, err)
		}
	}
	var want []tools.Conversation
	for _, thread := range threads {
		want = append(want, tools.Conversation{Agent: r.Agent.Name, Thread: thread})
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) || r.Agent.Name == "" {
		t.Errorf("the calls said %+v, want %+v", seen, want)
	}
}
