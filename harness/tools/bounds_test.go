package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// guard bounds a test's wait in case the bound under test fails, far past
// the bound itself.
const guard = 20 * time.Second

func TestTimeoutFromEnviron(t *testing.T) {
	got, skipped := FromEnviron([]string{
		"LNK_TOOL_GITHUB=http://gh/mcp", "LNK_TOOL_GITHUB_TIMEOUT=90s", "LNK_MEMORY=http://mem/mcp",
		"LNK_TOOL_MEMORY_TIMEOUT=5m", "LNK_TOOL_WEB_TIMEOUT=http://web/mcp", "LNK_TOOL_RUN_TIMEOUT=soon",
	})
	want := []Server{
		{Name: "github", URL: "http://gh/mcp", Timeout: 90 * time.Second},
		{Name: "memory", URL: "http://mem/mcp", Timeout: 5 * time.Minute},
		{Name: "web_timeout", URL: "http://web/mcp"}, // an address: a server of that name
	}
	if !slices.Equal(got, want) {
		t.Errorf("servers %v, want %v", got, want)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "LNK_TOOL_RUN_TIMEOUT") {
		t.Errorf("skipped %v, want the timeout that is not a duration", skipped)
	}
}

// A tool that never answers is given up at its server's limit, the call
// answered as an error that says so, and the tool told: the call's request
// ends, which is MCP's cancellation over HTTP.
func TestHangingToolCut(t *testing.T) {
	s := server.NewMCPServer("slow", "1", server.WithToolCapabilities(false))
	cancelled := make(chan struct{}, 1)
	s.AddTool(mcp.NewTool("hang"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)

	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	_, tr := begin(t, ctx, newAgent(t), []Server{{Name: "slow", URL: ts.URL, Timeout: 300 * time.Millisecond}}, Options{})
	r := tr.Call(ctx, "t", "slow__hang", nil)
	if !strings.Contains(r.Error, "did not answer in 300ms") {
		t.Fatalf("a hanging tool: %+v, want an error saying it did not answer in 300ms", r)
	}
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the tool was never told the call was given up")
	}
}

// bigServer is a real MCP server over streamable HTTP, spoken by hand so
// that its one tool, big, can answer size bytes of text from one buffer
// written again and again, allocating next to nothing in this process: as
// one JSON body, or as one event of a stream when sse.
func bigServer(t *testing.T, size int, sse bool) string {
	piece := bytes.Repeat([]byte("x"), 64<<10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":`
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"` + ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}}`
		case "tools/list":
			result = `{"tools":[{"name":"big","inputSchema":{"type":"object"}}]}}`
		case "tools/call":
		default:
			http.Error(w, "no such method", http.StatusBadRequest)
			return
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_, _ = w.Write([]byte(head))
		if req.Method == "tools/call" {
			_, _ = w.Write([]byte(`{"content":[{"type":"text","text":"`))
			for sent := 0; sent < size; sent += len(piece) {
				if _, err := w.Write(piece); err != nil {
					return
				}
			}
			result = `"}]}}`
		}
		if sse {
			result += "\n\n"
		}
		_, _ = w.Write([]byte(result))
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A tool answer far larger than is kept is not read whole: the call is
// answered with an error once the answer passes MaxAnswerBytes, having
// allocated a bounded amount however large the answer.
func TestLargeToolAnswerBounded(t *testing.T) {
	const size, bound = 200 << 20, 64 << 20
	for _, sse := range []bool{false, true} {
		name := "json"
		if sse {
			name = "sse"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			_, tr := begin(t, ctx, newAgent(t), []Server{{Name: "big", URL: bigServer(t, size, sse)}}, Options{})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := tr.Call(ctx, "t", "big__big", nil)
			runtime.ReadMemStats(&after)
			if !strings.Contains(r.Error, "over 4 MiB") {
				t.Errorf("an answer of %d MB: %d bytes of text, error %q; want one saying it was over 4 MiB", size>>20, len(r.Text), r.Error)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > bound {
				t.Errorf("the call allocated %d MB, over %d MB", got>>20, bound>>20)
			}
		})
	}
}
