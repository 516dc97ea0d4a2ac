package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// recorder is a real MCP server (mcp-go's server side) whose one call,
// note, keeps the conversation each call's _meta said, by the text the
// call was sent: what a tool server reads without the call's arguments.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]said // by the call's text
}

type said struct {
	conv Conversation
	ok   bool           // the call said a conversation
	meta map[string]any // its _meta as the server decoded it
}

func newRecorder() (*recorder, *server.MCPServer) {
	rec := &recorder{seen: map[string][]said{}}
	s := server.NewMCPServer("rec", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("note", mcp.WithString("text", mcp.Required())), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, ok := ConversationOf(r)
		var meta map[string]any
		if r.Params.Meta != nil {
			meta = r.Params.Meta.AdditionalFields
		}
		rec.mu.Lock()
		text := r.GetString("text", "")
		rec.seen[text] = append(rec.seen[text], said{c, ok, meta})
		rec.mu.Unlock()
		return mcp.NewToolResultText("noted"), nil
	})
	return rec, s
}

// calls returns what the calls sent text said.
func (rec *recorder) calls(text string) []said {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.seen[text]
}

// Each call says its conversation in its _meta, as a real MCP server
// reads it: on a kept session (memory) shared by turns of two threads at
// once, and on a turn's own session (web); over streamable HTTP and over
// HTTP+SSE. The _meta holds the thread and the agent and nothing more.
func TestCallsSayTheirConversation(t *testing.T) {
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			rec, s := newRecorder()
			var url string
			if transport == "sse" {
				ts := httptest.NewUnstartedServer(nil)
				ts.Config.Handler = server.NewSSEServer(s, server.WithBaseURL("http://"+ts.Listener.Addr().String()))
				ts.Start()
				t.Cleanup(ts.Close)
				url = ts.URL + "/sse"
			} else {
				ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
				t.Cleanup(ts.Close)
				url = ts.URL
			}
			a := newAgent(t)
			set := New(a, []Server{{Name: "memory", URL: url}, {Name: "web", URL: url}}, Options{})
			t.Cleanup(set.Close)
			ctx := context.Background()
			threads := []string{"web:1", "group:日本 & co"}
			var wg sync.WaitGroup
			for _, thread := range threads {
				tr, err := set.Begin(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer tr.End()
					for i := range 3 {
						for _, tool := range []string{"memory", "web"} {
							args, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("%s %s %d", tool, thread, i)})
							if r := tr.Call(ctx, thread, tool+"__note", args); r.Error != "" {
								t.Errorf("%s: %s", thread, r.Error)
							}
						}
					}
				}()
			}
			wg.Wait()
			for _, thread := range threads {
				for i := range 3 {
					for _, tool := range []string{"memory", "web"} {
						text := fmt.Sprintf("%s %s %d", tool, thread, i)
						got := rec.calls(text)
						want := Conversation{Agent: a.Name, Thread: thread}
						if len(got) != 1 || !got[0].ok || got[0].conv != want || len(got[0].meta) != 2 {
							t.Errorf("the call %q said %+v, want once %+v", text, got, want)
						}
					}
				}
			}
		})
	}
}

// The keys the call's _meta is read by, and what is not a conversation.
func TestConversationOf(t *testing.T) {
	for _, c := range []struct {
		meta map[string]any // nil: no _meta
		want Conversation
		ok   bool
	}{
		{nil, Conversation{}, false},
		{map[string]any{}, Conversation{}, false},
		{map[string]any{MetaThread: "t", MetaAgent: "ada"}, Conversation{"ada", "t"}, true},
		{map[string]any{MetaThread: "t", MetaAgent: "ada", "progressToken": 1}, Conversation{"ada", "t"}, true},
		{map[string]any{MetaThread: "t"}, Conversation{}, false},
		{map[string]any{MetaAgent: "ada"}, Conversation{}, false},
		{map[string]any{MetaThread: "", MetaAgent: "ada"}, Conversation{}, false},
		{map[string]any{MetaThread: 1, MetaAgent: "ada"}, Conversation{}, false},
	} {
		var req mcp.CallToolRequest
		if c.meta != nil {
			req.Params.Meta = &mcp.Meta{AdditionalFields: c.meta}
		}
		if got, ok := ConversationOf(req); got != c.want || ok != c.ok {
			t.Errorf("ConversationOf(%v) = %+v %v, want %+v %v", c.meta, got, ok, c.want, c.ok)
		}
	}
	// The keys as they go on the wire.
	b, err := json.Marshal(callMeta("ada", "web:1"))
	if err != nil || string(b) != `{"dev.lnk/agent":"ada","dev.lnk/thread":"web:1"}` {
		t.Errorf("_meta %s %v", b, err)
	}
}

// BenchmarkCallMeta is what a call's _meta costs the harness: made, and
// encoded as the client encodes a request's params.
func BenchmarkCallMeta(b *testing.B) {
	var agent any = "ada"
	b.ReportAllocs()
	for b.Loop() {
		var p mcp.CallToolParams
		p.Name, p.Meta = "echo", callMeta(agent, "web:1")
		if _, err := json.Marshal(&p); err != nil {
			b.Fatal(err)
		}
	}
}
