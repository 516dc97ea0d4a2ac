package httpconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/internal/epoll"
)

// guard bounds each test connection's reads and writes, so a server that
// hangs fails its test rather than the whole run. Nothing waits for it to
// pass.
const guard = 10 * time.Second

// watcher is the tests' one Watcher, as main makes one for the process.
var watcher = sync.OnceValues(func() (*Watcher, error) {
	set, err := epoll.New()
	if err != nil {
		return nil, err
	}
	return NewWatcher(set), nil
})

// servedBy is the key of the Server in the context serve gives ServeConn.
type servedBy struct{}

// serve answers s's connections on a listener of 127.0.0.1 until the test
// ends, each on a goroutine of its own as the fleet does, and gives the
// listener's address. At the test's end the connections still open are
// closed and their goroutines waited for.
func serve(t testing.TB, s *Server) string {
	t.Helper()
	if s.Watch == nil {
		w, err := watcher()
		if err != nil {
			t.Fatal(err)
		}
		s.Watch = w
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), servedBy{}, s)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open = map[net.Conn]bool{}
	)
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[nc] = true
			mu.Unlock()
			wg.Go(func() {
				s.ServeConn(ctx, nc)
				mu.Lock()
				delete(open, nc)
				mu.Unlock()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for nc := range open {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// client is a connection to a test server, speaking raw HTTP/1.1.
type client struct {
	t  testing.TB
	nc *net.TCPConn
	br *bufio.Reader
}

// dial connects to addr; the connection is closed when the test ends.
func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(guard))
	return &client{t: t, nc: nc.(*net.TCPConn), br: bufio.NewReader(nc)}
}

// send writes s as it is.
func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatal(err)
	}
}

// head reads the status line and header of an answer to a request of
// method, its body left to read.
func (c *client) head(method string) *http.Response {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading an answer to %s: %v", method, err)
	}
	return resp
}

// answer reads an answer to a request of method, and its whole body.
func (c *client) answer(method string) (*http.Response, string) {
	c.t.Helper()
	resp := c.head(method)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading the body of %s %d: %v", method, resp.StatusCode, err)
	}
	return resp, string(b)
}

// closed checks that the server closed the connection: the next read meets
// its end, or a reset when the server left bytes it never read.
func (c *client) closed() {
	c.t.Helper()
	b, err := c.br.ReadByte()
	switch {
	case err == nil:
		c.t.Fatalf("connection open: read %q", b)
	case isTimeout(err):
		c.t.Fatal("connection open: no end came")
	}
}

// recv is the next value from ch; one that never comes is the test
// binary's timeout to report, with every goroutine's stack.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	return <-ch
}

// echo answers with its request's method, path and body.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
})

// syncBuffer is a bytes.Buffer safe for concurrent use, for a Server's log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Two requests on one connection are each answered with their length, and
// the State hook follows the connection as net/http's ConnState would.
func TestKeepAlive(t *testing.T) {
	states := make(chan http.ConnState, 10)
	addr := serve(t, &Server{Handler: echo, State: func(_ net.Conn, st http.ConnState) { states <- st }})
	c := dial(t, addr)
	c.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := c.answer("GET")
	if body != "GET /one " || resp.ContentLength != int64(len(body)) || resp.TransferEncoding != nil || resp.Close {
		t.Errorf("first answer: %q, Content-Length %d, Transfer-Encoding %q, close %v", body, resp.ContentLength, resp.TransferEncoding, resp.Close)
	}
	c.send("POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	resp, body = c.answer("POST")
	if body != "POST /two hello" || resp.ContentLength != int64(len(body)) || resp.Close {
		t.Errorf("second answer: %q, Content-Length %d, close %v", body, resp.ContentLength, resp.Close)
	}
	want := []http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateActive, http.StateIdle, http.StateClosed}
	for i, w := range want {
		if w == http.StateClosed {
			// Closed once its Idle came: a caller gone before that is
			// seen, and its connection not kept.
			c.nc.Close()
		}
		if got := recv(t, states); got != w {
			t.Fatalf("state %d: %v, want %v", i, got, w)
		}
	}
}

// Between requests, and while a handler runs once the request is read, a
// connection holds no read buffer: a request without a body gives it back
// before its handler runs, one with a body once the body is read, whether
// by the handler or by the server dropping what it left.
func TestIdleHoldsNoBuffer(t *testing.T) {
	s := &Server{}
	held := make(chan bool, 10)
	var served atomic.Pointer[conn] // the one connection of the test, as its handler sees it
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := w.(*response).c
		served.Store(c)
		if r.Method == http.MethodGet {
			held <- c.br != nil
		}
		io.WriteString(w, "ok")
	})
	idle := make(chan bool, 10)
	s.State = func(nc net.Conn, st http.ConnState) {
		if c := served.Load(); st == http.StateIdle && c != nil && c.nc == nc {
			idle <- c.br != nil
		}
	}
	c := dial(t, serve(t, s))
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.answer("GET")
	if recv(t, held) {
		t.Error("a GET's handler runs holding the read buffer")
	}
	if recv(t, idle) {
		t.Error("idle after a GET, the connection holds its read buffer")
	}
	c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	c.answer("POST")
	if recv(t, idle) {
		t.Error("idle after a POST whose body was left to the server, the connection holds its read buffer")
	}
}

// A request refused before its handler is answered with its status and
// its connection closed; the handler never sees it.
func TestRefused(t *testing.T) {
	for _, tt := range []struct {
		name     string
		maxBytes int
		req      string
		code     int
	}{
		{"header over MaxHeaderBytes", 1 << 10, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 8<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"many header lines over MaxHeaderBytes", 1 << 10, "GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Line: 0123456789\r\n", 500) + "\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"malformed request line", 0, "GET\r\n\r\n", http.StatusBadRequest},
		{"malformed header line", 0, "GET / HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", http.StatusBadRequest},
		{"HTTP/1.1 without Host", 0, "GET / HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"two Host headers (http.ReadRequest's refusal)", 0, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", http.StatusBadRequest},
		{"an expectation other than 100-continue", 0, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx", http.StatusExpectationFailed},
		{"100-continue asked in HTTP/1.0", 0, "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n", http.StatusExpectationFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			handled := make(chan string, 1)
			addr := serve(t, &Server{
				MaxHeaderBytes: tt.maxBytes,
				Handler:        http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handled <- r.URL.Path }),
			})
			c := dial(t, addr)
			c.send(tt.req)
			resp, body := c.answer("GET")
			if resp.StatusCode != tt.code || !resp.Close {
				t.Errorf("answered %d (close %v) %q, want %d and close", resp.StatusCode, resp.Close, body, tt.code)
			}
			c.closed()
			select {
			case p := <-handled:
				t.Errorf("the handler saw %s", p)
			default:
			}
		})
	}
}

// An HTTP/1.0 connection is closed after its answer unless its request
// asked to keep it, and so is any after a request saying Connection: close.
func TestConnectionKept(t *testing.T) {
	big := strings.Repeat("z", 6<<10)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			io.WriteString(w, big)
			return
		}
		io.WriteString(w, "ok")
	})})

	for _, tt := range []struct{ name, req string }{
		{"HTTP/1.0", "GET / HTTP/1.0\r\n\r\n"},
		{"Connection: close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(tt.req)
			resp, body := c.answer("GET")
			if body != "ok" || !resp.Close {
				t.Errorf("answered %q, close %v; want ok and close", body, resp.Close)
			}
			c.closed()
		})
	}
	t.Run("HTTP/1.0 keep-alive", func(t *testing.T) {
		c := dial(t, addr)
		for i := range 2 {
			c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
			resp, body := c.answer("GET")
			if body != "ok" || resp.Close || resp.Header.Get("Connection") != "keep-alive" || resp.ContentLength != 2 {
				t.Errorf("answer %d: %q, close %v, Connection %q, Content-Length %d", i, body, resp.Close, resp.Header.Get("Connection"), resp.ContentLength)
			}
		}
	})
	t.Run("HTTP/1.0 keep-alive, an answer of unknown length", func(t *testing.T) {
		// No chunks in HTTP/1.0: the answer ends with its connection.
		c := dial(t, addr)
		c.send("GET /big HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		resp, body := c.answer("GET")
		if body != big || !resp.Close || resp.ContentLength != -1 {
			t.Errorf("answered %d bytes, close %v, Content-Length %d; want %d bytes, close", len(body), resp.Close, resp.ContentLength, len(big))
		}
	})
}

// Requests written in one write are answered in their order.
func TestPipelined(t *testing.T) {
	c := dial(t, serve(t, &Server{Handler: echo}))
	c.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
		"POST /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n" +
		"GET /four HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"GET /one ", "POST /two abc", "POST /three de", "GET /four "} {
		if _, body := c.answer("GET"); body != want {
			t.Fatalf("answered %q, want %q", body, want)
		}
	}
}

// A caller closing its connection ends its request's context, with
// errLeft its cause, whether the handler read a body or had none.
func TestCallerLeaves(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		started <- struct{}{}
		<-r.Context().Done()
		ended <- context.Cause(r.Context())
	})})
	for _, req := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		c := dial(t, addr)
		c.send(req)
		recv(t, started)
		c.nc.Close()
		if err := recv(t, ended); err != errLeft {
			t.Errorf("%q: the context ended with %v, want errLeft", req, err)
		}
	}
}

// A caller still there does not see its request's context end, though it
// sends the next request while the handler runs. Another caller leaving,
// and seen to, is the mark that the watcher looked at every event before.
func TestCallerStays(t *testing.T) {
	started := make(chan string, 2)
	left := make(chan error, 1)
	stayed := make(chan error, 1)
	release := make(chan struct{})
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		switch r.URL.Path {
		case "/stay":
			started <- "stay"
			select {
			case <-release:
				stayed <- ctx.Err()
			case <-ctx.Done():
				stayed <- context.Cause(ctx)
			}
		case "/leave":
			started <- "leave"
			<-ctx.Done()
			left <- context.Cause(ctx)
		}
		io.WriteString(w, r.URL.Path)
	})})
	a := dial(t, addr)
	a.send("GET /stay HTTP/1.1\r\nHost: x\r\n\r\n")
	if s := recv(t, started); s != "stay" {
		t.Fatalf("started %s", s)
	}
	a.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	b := dial(t, addr)
	b.send("GET /leave HTTP/1.1\r\nHost: x\r\n\r\n")
	if s := recv(t, started); s != "leave" {
		t.Fatalf("started %s", s)
	}
	b.nc.Close()
	if err := recv(t, left); err != errLeft {
		t.Fatalf("the leaving caller's context ended with %v, want errLeft", err)
	}
	close(release)
	if err := recv(t, stayed); err != nil {
		t.Errorf("the staying caller's context ended with %v", err)
	}
	for _, want := range []string{"/stay", "/next"} {
		if _, body := a.answer("GET"); body != want {
			t.Errorf("answered %q, want %q", body, want)
		}
	}
}

// A handler's panic is logged and closes its connection without an answer
// that looks whole; http.ErrAbortHandler is not logged; the next
// connection is served.
func TestPanic(t *testing.T) {
	var logs syncBuffer
	addr := serve(t, &Server{
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/panic":
				io.WriteString(w, "partial")
				panic("boom")
			case "/flushed":
				io.WriteString(w, "partial")
				w.(http.Flusher).Flush()
				panic("boom after a flush")
			case "/abort":
				io.WriteString(w, "partial")
				panic(http.ErrAbortHandler)
			}
			io.WriteString(w, "ok")
		}),
	})

	c := dial(t, addr)
	c.send("GET /panic HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(c.br, nil); err == nil {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("a panicking handler's answer came: %d %q", resp.StatusCode, b)
	}
	if l := logs.String(); !strings.Contains(l, "handler panicked") || !strings.Contains(l, "boom") || !strings.Contains(l, "path=/panic") {
		t.Errorf("logged %q", l)
	}

	c = dial(t, addr)
	c.send("GET /flushed HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := c.head("GET")
	if b, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("a handler panicking after a flush gave a whole answer: %q", b)
	}
	c.closed()

	before := logs.String()
	c = dial(t, addr)
	c.send("GET /abort HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := http.ReadResponse(c.br, nil); err == nil {
		t.Error("an aborted handler's answer came")
	}
	if l := logs.String(); l != before {
		t.Errorf("http.ErrAbortHandler logged: %q", strings.TrimPrefix(l, before))
	}

	c = dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, body := c.answer("GET"); body != "ok" {
		t.Errorf("after the panics, answered %q", body)
	}
}

// A request's context is made from ServeConn's and ends once its handler
// returned; its RemoteAddr is its caller's.
func TestRequestContext(t *testing.T) {
	s := &Server{}
	seen := make(chan *http.Request, 1)
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Err() != nil {
			t.Errorf("the context ended before the handler: %v", context.Cause(r.Context()))
		}
		seen <- r
	})
	c := dial(t, serve(t, s))
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.answer("GET")
	r := recv(t, seen)
	if r.Context().Value(servedBy{}) != s {
		t.Error("the request's context is not made from ServeConn's")
	}
	if r.Context().Err() == nil {
		t.Error("the request's context still open after its answer")
	}
	if r.RemoteAddr != c.nc.LocalAddr().String() {
		t.Errorf("RemoteAddr %s, want %s", r.RemoteAddr, c.nc.LocalAddr())
	}
}

// A request's header not whole within ReadHeaderTimeout closes its
// connection unanswered; its body not whole within ReadTimeout fails the
// handler's read, and the connection is closed after its answer.
func TestReadTimeouts(t *testing.T) {
	t.Run("header", func(t *testing.T) {
		c := dial(t, serve(t, &Server{Handler: echo, ReadHeaderTimeout: time.Millisecond}))
		c.send("GET / HTTP/1.1\r\n")
		c.closed()
	})
	t.Run("body", func(t *testing.T) {
		c := dial(t, serve(t, &Server{Handler: echo, ReadHeaderTimeout: guard, ReadTimeout: time.Millisecond}))
		c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhe")
		if resp, body := c.answer("POST"); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "timeout") {
			t.Errorf("answered %d %q, want the handler's 400 of a timeout", resp.StatusCode, body)
		}
		c.closed()
	})
}

// A connection idle longer than IdleTimeout is closed.
func TestIdleTimeout(t *testing.T) {
	c := dial(t, serve(t, &Server{Handler: echo, IdleTimeout: time.Millisecond}))
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, body := c.answer("GET"); body != "GET / " {
		t.Errorf("answered %q", body)
	}
	c.closed()
}

// readAnswer reads one answer into buf with no allocation: its header up
// to its blank line, then as many bytes as its Content-Length says. It
// gives the answer's length.
func readAnswer(r io.Reader, buf []byte) (int, error) {
	n, end := 0, -1
	for {
		m, err := r.Read(buf[n:])
		n += m
		if end < 0 {
			if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
				end = i + 4
				h := buf[:i]
				j := bytes.Index(h, []byte("\r\nContent-Length: "))
				if j < 0 {
					return n, fmt.Errorf("no Content-Length in %q", h)
				}
				l := 0
				for _, d := range h[j+len("\r\nContent-Length: "):] {
					if d < '0' || d > '9' {
						break
					}
					l = l*10 + int(d-'0')
				}
				end += l
			}
		}
		if end >= 0 && n >= end {
			if n > end {
				return n, fmt.Errorf("%d bytes past the answer", n-end)
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if n == len(buf) {
			return n, errors.New("answer over the buffer")
		}
	}
}

// TestAllocs is the allocation budget of one request and its answer on a
// kept connection, server and client together (the client's share is
// none: it writes bytes made once and reads into a buffer of its own).
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	})})
	c := dial(t, addr)
	req := []byte("POST /message HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"text\":\"hey\"}\n")
	buf := make([]byte, 1<<10)
	exchange := func() {
		if _, err := c.nc.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := readAnswer(c.nc, buf); err != nil {
			t.Fatal(err)
		}
	}
	exchange()
	// A collection in the middle would empty the pools, and the buffers
	// made again would count.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// Measured at 19 with Go 1.26.8: 12 in http.ReadRequest (the request,
	// its line, URL, header and values, body); the request's context and
	// its copy with it; the response with its header map, the body around
	// the request's; and the handler's own string written. What the server
	// adds to the answer's header is written, never put in its map.
	const budget = 19
	n := testing.AllocsPerRun(100, exchange)
	t.Logf("%.0f allocations a request", n)
	if n > budget {
		t.Errorf("%.0f allocations a request, want at most %d", n, budget)
	}
}

// A connection rests once its first request is answered: the watcher's set
// holds it for no events, so its caller leaving wakes only its own wait.
// Its second request has it watched again, to its close, and its caller
// leaving then ends that request's context.
func TestRestsAfterFirst(t *testing.T) {
	fds := make(chan int, 1)
	idle := make(chan struct{}, 3)
	running := make(chan uint32, 1)
	var served atomic.Int32
	addr := serve(t, &Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if served.Add(1) < 3 {
				io.WriteString(w, "ok")
				return
			}
			running <- 0
			<-r.Context().Done()
			running <- 0
		}),
		State: func(nc net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				rc, _ := nc.(*net.TCPConn).SyscallConn()
				rc.Control(func(fd uintptr) { fds <- int(fd) })
			case http.StateIdle:
				idle <- struct{}{}
			}
		},
	})
	c := dial(t, addr)
	get := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	c.send(get)
	fd := recv(t, fds)
	c.answer("GET")
	recv(t, idle)
	if ev := watchedFor(t, fd); ev != 0 {
		t.Errorf("after the first answer the set holds the connection for %#x, want 0", ev)
	}
	c.send(get)
	c.answer("GET")
	recv(t, idle)
	if ev := watchedFor(t, fd); ev != watched {
		t.Errorf("after the second answer the set holds the connection for %#x, want %#x", ev, watched)
	}
	c.send(get)
	recv(t, running)
	c.nc.Close()
	recv(t, running) // the third request's context ended: its caller left
}

// watchedFor is the events the watcher's set holds descriptor fd for,
// read from the kernel's account of this process's epoll sets
// (/proc/self/fdinfo): the set whose entry for fd is not the runtime
// poller's, which also asks for reads and writes. The hang-ups and errors
// every entry is told, which the kernel shows too, are left out.
func watchedFor(t *testing.T, fd int) uint32 {
	t.Helper()
	dir, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		t.Fatal(err)
	}
	found := []uint32{}
	for _, e := range dir {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			var tfd int
			var ev uint32
			if n, _ := fmt.Sscanf(line, "tfd: %d events: %x", &tfd, &ev); n == 2 && tfd == fd && ev&(unix.EPOLLIN|unix.EPOLLOUT) == 0 {
				found = append(found, ev&^(unix.EPOLLHUP|unix.EPOLLERR))
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("descriptor %d is in %d epoll sets apart from the poller's, want 1", fd, len(found))
	}
	return found[0]
}
