package tools

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
// servers started here prints one once it listens).
func startNode(t testing.TB, port int, name string, args ...string) {
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
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), said) {
			// Keep reading its output, so a full pipe never stops it.
			go io.Copy(io.Discard, r)
			return
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("%s ended without saying it listens %s: %s", name, said, strings.Join(seen, "\n"))
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
// behind supergateway's stdio to streamable HTTP bridge.
func memoryBridged(t testing.TB) string {
	gw := needNode(t, "supergateway")
	mem := needNode(t, "mcp-server-memory")
	port := freePort(t)
	t.Setenv("MEMORY_FILE_PATH", filepath.Join(t.TempDir(), "memory.jsonl"))
	startNode(t, port, gw, "--stdio", mem, "--outputTransport", "streamableHttp", "--stateful", "--port", fmt.Sprint(port), "--logLevel", "info")
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
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
			if r := tr.Call(ctx, "everything__echo", []byte(`{"message":"hello"}`)); !strings.Contains(r.Text, "hello") || r.Error != "" {
				t.Errorf("echo: %+v", r)
			}
			if r := tr.Call(ctx, "everything__get-sum", []byte(`{"a":2,"b":40}`)); !strings.Contains(r.Text, "42") || r.Error != "" {
				t.Errorf("get-sum: %+v", r)
			}
		})
	}
}

// server-memory, a stdio server written by others, behind supergateway's
// bridge to streamable HTTP: what one call keeps, the next reads.
func TestMemoryBridged(t *testing.T) {
	addr := memoryBridged(t)
	ctx := context.Background()
	set, tr := begin(t, ctx, newAgent(t), []Server{{Name: "memory", URL: addr}}, Options{})
	if got := names(tr); !slices.Contains(got, "memory__create_entities") || !slices.Contains(got, "memory__read_graph") {
		t.Fatalf("offered %v", got)
	}
	r := tr.Call(ctx, "memory__create_entities", []byte(`{"entities":[{"name":"Ada","entityType":"person","observations":["likes tea"]}]}`))
	if r.Error != "" {
		t.Fatalf("create_entities: %+v", r)
	}
	tr.End()
	tr2, _ := set.Begin(ctx, nil) // the next turn, on the kept session
	defer tr2.End()
	if r := tr2.Call(ctx, "memory__read_graph", nil); !strings.Contains(r.Text, "likes tea") {
		t.Errorf("read_graph: %+v", r)
	}
}
