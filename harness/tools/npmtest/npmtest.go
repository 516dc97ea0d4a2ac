package npmtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Dir is where .ci/run installs the real MCP servers the tests run (npm ci
// in harness/tools/testdata/npm), found from this file's place, so a test
// of any package finds it.
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("npmtest: no source file to find testdata/npm from")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata", "npm")
}

// Need skips a test when node or the installed servers are missing,
// except under CI, where they must be there.
func Need(t testing.TB, bin string) string {
	t.Helper()
	path := filepath.Join(Dir(t), "node_modules", ".bin", bin)
	_, nodeErr := exec.LookPath("node")
	_, binErr := os.Stat(path)
	if nodeErr != nil || binErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs node and %s (npm ci in %s): %v %v", bin, Dir(t), nodeErr, binErr)
		}
		t.Skipf("no node or no %s: run npm ci in %s", bin, Dir(t))
	}
	return path
}

// FreePort finds a port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts a node MCP server listening on port, and waits until
// it says so: a line of its output holding "on port <port>" (each of the
// servers started here prints one once it listens). What it prints after
// is kept, for a test to read.
func Start(t testing.TB, port int, name string, args ...string) *Out {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Dir = Dir(t)
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
			out := &Out{more: make(chan struct{})}
			go out.read(sc)
			return out
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("%s ended without saying it listens %s: %s", name, said, strings.Join(seen, "\n"))
	return nil
}

// Out is what a node server printed once it listened, a line at a
// time. It is safe for concurrent use.
type Out struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed, and made again, when a line comes or the output ends
	ended bool
}

func (o *Out) read(sc *bufio.Scanner) {
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
func (o *Out) Find(ctx context.Context, parts ...string) (string, bool) {
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
func Everything(t testing.TB, transport string) string {
	bin := Need(t, "mcp-server-everything")
	port := FreePort(t)
	Start(t, port, bin, transport)
	if transport == "sse" {
		return fmt.Sprintf("http://127.0.0.1:%d/sse", port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}
