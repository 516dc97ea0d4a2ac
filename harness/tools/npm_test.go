package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/tools/npmtest"
)

// memoryBridged starts @modelcontextprotocol/server-memory, a stdio server,
// behind supergateway's stdio to streamable HTTP bridge, which prints each
// message it passes to the server.
func memoryBridged(t testing.TB) (string, *npmtest.Out) {
	gw := npmtest.Need(t, "supergateway")
	mem := npmtest.Need(t, "mcp-server-memory")
	port := npmtest.FreePort(t)
	t.Setenv("MEMORY_FILE_PATH", filepath.Join(t.TempDir(), "memory.jsonl"))
	out := npmtest.Start(t, port, gw, "--stdio", mem, "--outputTransport", "streamableHttp", "--stateful", "--port", fmt.Sprint(port), "--logLevel", "info")
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), out
}

// server-everything, written by others, over both transports: its list, its
// instructions, and calls to echo and get-sum.
func TestEverything(t *testing.T) {
	for _, transport := range []string{"streamableHttp", "sse"} {
		t.Run(transport, func(t *testing.T) {
			addr := npmtest.Everything(t, transport)
			ctx := context.Background()
			_, tr := begin(t, ctx, newAgent(t), []Server{{Name: "everything", URL: addr}}, Options{})
			got := names(tr)
			if !slices.Contains(got, "everything__echo") || !slices.Contains(got, "everything__get-sum") || !slices.IsSorted(got) {
				t.Fatalf("offered %v", got)
			}
			if in := tr.Instructions(); len(in) != 1 || in[0].Text == "" || len(in[0].Text) > MaxInstructionBytes {
				t.Fatalf("instructions %v", in)
			}
			if r := tr.Call(ctx, "t", "everything__echo", []byte(`{"message":"hello"}`)); !strings.Contains(r.Text, "hello") || r.Error != "" {
				t.Errorf("echo: %+v", r)
			}
			if r := tr.Call(ctx, "t", "everything__get-sum", []byte(`{"a":2,"b":40}`)); !strings.Contains(r.Text, "42") || r.Error != "" {
				t.Errorf("get-sum: %+v", r)
			}
		})
	}
}

// server-memory, a stdio server written by others, behind supergateway's
// bridge to streamable HTTP: what one call keeps, the next reads.
func TestMemoryBridged(t *testing.T) {
	addr, _ := memoryBridged(t)
	ctx := context.Background()
	set, tr := begin(t, ctx, newAgent(t), []Server{{Name: "memory", URL: addr}}, Options{})
	if got := names(tr); !slices.Contains(got, "memory__create_entities") || !slices.Contains(got, "memory__read_graph") {
		t.Fatalf("offered %v", got)
	}
	r := tr.Call(ctx, "t", "memory__create_entities", []byte(`{"entities":[{"name":"Ada","entityType":"person","observations":["likes tea"]}]}`))
	if r.Error != "" {
		t.Fatalf("create_entities: %+v", r)
	}
	tr.End()
	tr2, _ := set.Begin(ctx, nil) // the next turn, on the kept session
	defer tr2.End()
	if r := tr2.Call(ctx, "t", "memory__read_graph", nil); !strings.Contains(r.Text, "likes tea") {
		t.Errorf("read_graph: %+v", r)
	}
}

// supergateway, a bridge written by others, passes each message it is sent
// on to server-memory as it came, and prints it: each call's _meta says the
// conversation, on the kept session two threads share.
func TestBridgeSeesConversation(t *testing.T) {
	addr, out := memoryBridged(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newAgent(t)
	set := New(a, []Server{{Name: "memory", URL: addr}}, Options{})
	t.Cleanup(set.Close)
	for _, thread := range []string{"web:1", "group:日本"} {
		tr, err := set.Begin(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		args := fmt.Sprintf(`{"entities":[{"name":"E %s","entityType":"thread","observations":["o"]}]}`, thread)
		if r := tr.Call(ctx, thread, "memory__create_entities", []byte(args)); r.Error != "" {
			t.Fatalf("%s: %+v", thread, r)
		}
		tr.End()
		line, ok := out.Find(ctx, "Child:", `"tools/call"`, "E "+thread)
		if !ok {
			t.Fatalf("supergateway printed no call of %s", thread)
		}
		var msg struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line[strings.Index(line, "{"):]), &msg); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if m := msg.Params.Meta; m[MetaThread] != thread || m[MetaAgent] != a.Name {
			t.Errorf("the call of %s was passed on with _meta %v", thread, m)
		}
	}
}

// BenchmarkCallEverything is one call on a kept session to
// server-everything's echo, in a process of its own: the allocations
// counted are the harness's alone, the server's being in node.
func BenchmarkCallEverything(b *testing.B) {
	benchEcho(b, npmtest.Everything(b, "streamableHttp"), "web:1", `{"message":"x"}`)
}
