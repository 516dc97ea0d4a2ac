package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// npmDir is where .ci/run installs the real MCP servers the tests run
// (npm ci in testdata/npm).
func npmDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/npm")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// needNode skips a test when node or the installed servers are missing,
// except under CI, where they must be there.
func needNode(t testing.TB, bin string) string {
	t.Helper()
	path := filepath.Join(npmDir(t), "node_modules", ".bin", bin)
	_, nodeErr := exec.LookPath("node")
	_, binErr := os.Stat(path)
	if nodeErr != nil || binErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs node and %s (npm ci in %s): %v %v", bin, npmDir(t), nodeErr, binErr)
		}
		t.Skipf("no node or no %s: run npm ci in %s", bin, npmDir(t))
	}
	return path
}

// freePort finds a port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNode starts a node MCP server listening on port, and waits until
// it says so: a line of its output holding "on port <port>" (each of the
// servers started here prints one once it listens). What it prints after
// is kept, for a test to read.
func startNode(t testing.TB, port int, name string, args ...string) *nodeOut {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Dir = npmDir(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		r.Close()
	})
	said := fmt.Sprintf("on port %d", port)
	var seen []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), said) {
			// Keep reading its output, so a full pipe never stops it.
			out := &nodeOut{more: make(chan struct{})}
			go out.read(sc)
			return out
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("%s ended without saying it listens %s: %s", name, said, strings.Join(seen, "\n"))
	return nil
}

// nodeOut is what a node server printed once it listened, a line at a
// time. It is safe for concurrent use.
type nodeOut struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed, and made again, when a line comes or the output ends
	ended bool
}

func (o *nodeOut) read(sc *bufio.Scanner) {
	for {
		ok := sc.Scan()
		o.mu.Lock()
		if ok {
			o.lines = append(o.lines, sc.Text())
		} else {
			o.ended = true
		}
		close(o.more)
		o.more = make(chan struct{})
		o.mu.Unlock()
		if !ok {
			return
		}
	}
}

// find waits for a line printed that holds each of parts, and returns it;
// false once the output ended, or ctx did, without one.
func (o *nodeOut) find(ctx context.Context, parts ...string) (string, bool) {
	for i := 0; ; {
		o.mu.Lock()
		lines, ended, more := o.lines, o.ended, o.more
		o.mu.Unlock()
		for ; i < len(lines); i++ {
			if containsAll(lines[i], parts) {
				return lines[i], true
			}
		}
		if ended {
			return "", false
		}
		select {
		case <-more:
		case <-ctx.Done():
			return "", false
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Everything starts @modelcontextprotocol/server-everything over
// transport ("streamableHttp" or "sse") and returns its address.
func everything(t testing.TB, transport string) string {
	bin := needNode(t, "mcp-server-everything")
	port := freePort(t)
	startNode(t, port, bin, transport)
	if transport == "sse" {
		return fmt.Sprintf("http://127.0.0.1:%d/sse", port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// memoryBridged starts @modelcontextprotocol/server-memory, a stdio server,
// behind supergateway's stdio to streamable HTTP bridge, which prints each
// message it passes to the server.
func memoryBridged(t testing.TB) (string, *nodeOut) {
	gw := needNode(t, "supergateway")
	mem := needNode(t, "mcp-server-memory")
	port := freePort(t)
	t.Setenv("MEMORY_FILE_PATH", filepath.Join(t.TempDir(), "memory.jsonl"))
	out := startNode(t, port, gw, "--stdio", mem, "--outputTransport", "streamableHttp", "--stateful", "--port", fmt.Sprint(port), "--logLevel", "info")
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port), out
}

// server-everything, written by others, over both transports: its list, its
// instructions, and calls to echo and get-sum.
func TestEverything(t *testing.T) {
	for _, transport := range []string{"streamableHttp", "sse"} {
		t.Run(transport, func(t *testing.T) {
			addr := everything(t, transport)
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
		line, ok := out.find(ctx, "Child:", `"tools/call"`, "E "+thread)
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
	benchEcho(b, everything(b, "streamableHttp"), "web:1", `{"message":"x"}`)
}
