package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/trace/tracetest"
)

// The caller's trace: the span it sent the message from.
const (
	callerTrace = "0af7651916cd43dd8448eb211c80319c"
	callerSpan  = "b7ad6b7169203331"
)

// A turn with a tool call, sent with a traceparent to a process told by
// the standard OTEL_* variables to export, read back from a real Jaeger by
// that trace id once the process has stopped: the turn, its two model
// calls, its tool call and its appends in one tree under the caller's
// span, with the GenAI attributes, and nothing the conversation said.
func TestTraceInJaeger(t *testing.T) {
	j := tracetest.StartJaeger(t)
	var called atomic.Int32
	mcpServer := server.NewMCPServer("web", "1", server.WithToolCapabilities(false))
	mcpServer.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		called.Add(1)
		return mcp.NewToolResultText("echoed secret-result"), nil
	})
	tool := httptest.NewServer(server.NewStreamableHTTPServer(mcpServer))
	t.Cleanup(tool.Close)

	dir := t.TempDir()
	script := filepath.Join(dir, "script.toml")
	os.WriteFile(script, []byte(`
[[rule]]
match = "any"
results = "no"
[[rule.call]]
name = "web__echo"
args = '{"text":"secret-args"}'
[[rule]]
match = "any"
results = "yes"
text = "secret-answer"
`), 0o600)
	_, modelAddr := start(t, nil, "lnk", "scripted-model", "--listen", "127.0.0.1:0", "--script", script)
	key := "k-trace-0123456789abcdef01234567"
	home, keyFile := adaHome(t, dir, "", key)
	var log bytes.Buffer
	cmd, addr := startLogged(t, []string{
		"LNK_MODEL_PROXY=http://" + modelAddr,
		"LNK_TOOL_WEB=" + tool.URL,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLP,
		"OTEL_SERVICE_NAME=lnk-link-harness",
	}, &log, "lnk-link-harness", "serve", "--home", home, "--listen", "127.0.0.1:0", "--key-file", keyFile)

	resp, _, err := fleettest.Exchange(http.DefaultClient, http.MethodPost, "http://"+addr+"/v1/agents/ada/chats/web:1/messages", key, `{"id":"m1","text":"secret-message"}`,
		"Traceparent", "00-"+callerTrace+"-"+callerSpan+"-01", "Tracestate", "link=caller")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || called.Load() != 1 {
		t.Fatalf("answered %s with the tool called %d times, want 200 and once", resp.Status, called.Load())
	}
	// A stop flushes what the exporter holds; Jaeger has stored a batch
	// before it answers its export.
	if err := terminate(cmd); err != nil {
		t.Fatalf("exit: %v\n%s", err, log.String())
	}
	checkTurnTree(t, j.Trace(t, callerTrace))
}

// checkTurnTree checks a turn's spans as Jaeger holds them.
func checkTurnTree(t *testing.T, spans []tracetest.Span) {
	t.Helper()
	byName := map[string][]tracetest.Span{}
	for _, s := range spans {
		name := s.Name
		if strings.HasPrefix(name, "chat ") {
			name = "chat" // the model the agent's spec names
		}
		byName[name] = append(byName[name], s)
		if s.TraceID != callerTrace || s.State != "link=caller" {
			t.Errorf("span %s in trace %s state %q, not the caller's", s.Name, s.TraceID, s.State)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, "secret-") || strings.Contains(v, "k-trace-") {
				t.Errorf("span %s: %s = %q holds what the conversation said or a key", s.Name, k, v)
			}
		}
	}
	turns := byName["invoke_agent ada"]
	if len(turns) != 1 {
		t.Fatalf("%d turn spans; all: %v", len(turns), spanNames(spans))
	}
	turn := turns[0]
	if turn.Parent != callerSpan || turn.Attrs["gen_ai.conversation.id"] != "web:1" || turn.Attrs["lnk.store"] != "log" {
		t.Errorf("turn span: parent %s, attributes %v; want the caller's %s, web:1, log", turn.Parent, turn.Attrs, callerSpan)
	}
	// The message, the answer calling the tool, its result, the answer.
	chats, tools, appends := byName["chat"], byName["execute_tool web__echo"], byName["append log"]
	if len(chats) != 2 || len(tools) != 1 || len(appends) != 4 || len(spans) != 8 {
		t.Fatalf("spans %v; want the turn, 2 chats, a tool, 4 appends", spanNames(spans))
	}
	for _, s := range spans {
		if s.ID != turn.ID && s.Parent != turn.ID {
			t.Errorf("span %s's parent %s, not the turn %s", s.Name, s.Parent, turn.ID)
		}
	}
	for _, c := range chats {
		for _, k := range []string{"gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model",
			"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
			"gen_ai.response.finish_reasons"} {
			if c.Attrs[k] == "" {
				t.Errorf("chat span lacks %s: %v", k, c.Attrs)
			}
		}
		if c.Attrs["gen_ai.operation.name"] != "chat" || c.Kind != "client" || c.Name != "chat "+c.Attrs["gen_ai.request.model"] {
			t.Errorf("chat span %s: kind %s, attributes %v", c.Name, c.Kind, c.Attrs)
		}
	}
	tl := tools[0]
	if tl.Attrs["gen_ai.tool.name"] != "web__echo" || tl.Attrs["gen_ai.tool.call.id"] == "" || tl.Error {
		t.Errorf("tool span: %v, failed %v", tl.Attrs, tl.Error)
	}
	for _, a := range appends {
		sync := a.Attrs["lnk.store.sync"]
		if a.Attrs["lnk.store.seq"] == "1" && sync != "false" || a.Attrs["lnk.store.seq"] != "1" && sync != "true" {
			t.Errorf("append of seq %s: lnk.store.sync %s; the message's is deferred, the rest synced", a.Attrs["lnk.store.seq"], sync)
		}
	}
}

func spanNames(spans []tracetest.Span) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}
