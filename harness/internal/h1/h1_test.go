package h1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/internal/h1/h1test"
)

// TestMain serves as the child of TestNoGoroutine when asked to (see
// childServer).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		serveChild()
		return
	}
	os.Exit(m.Run())
}

// counted is t, its dials counted, and a client sending through it.
func counted(t *Transport) (*Transport, *http.Client, *atomic.Int64) {
	var n atomic.Int64
	var d net.Dialer
	t.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	return t, &http.Client{Transport: t}, &n
}

// get sends a GET to url through hc and reads the whole answer.
func get(t testing.TB, hc *http.Client, url string) string {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

func TestKeepAlive(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
	}))
	defer s.Close()
	_, hc, dials := counted(&Transport{})
	for i := range 1000 {
		body := fmt.Sprintf("message %d", i)
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = hc.Post(s.URL+"/post", "text/plain", strings.NewReader(body))
		} else {
			resp, err = hc.Get(s.URL + "/get")
			body = ""
		}
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := fmt.Sprintf("%s /%s %s", resp.Request.Method, strings.ToLower(resp.Request.Method), body)
		if string(b) != want {
			t.Fatalf("request %d: got %q, want %q", i, b, want)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("1000 requests dialed %d times, want 1", n)
	}
}

// sse is a server streaming two events, the second once next is closed or
// sent on; its handler returns when the request's context ends or after
// the second.
func sse(next <-chan struct{}) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	}))
}

// event reads one event from br.
func event(br *bufio.Reader) (string, error) {
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ev.String(), err
		}
		if line == "\n" {
			return ev.String(), nil
		}
		ev.WriteString(strings.TrimSuffix(line, "\n"))
	}
}

func TestStream(t *testing.T) {
	next := make(chan struct{})
	s := sse(next)
	defer s.Close()
	tr, hc, dials := counted(&Transport{})
	for i := range 2 {
		resp, err := hc.Get(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
			t.Fatalf("transfer encoding %q, want chunked", resp.TransferEncoding)
		}
		br := bufio.NewReader(resp.Body)
		// The server writes the second event only once the first is read.
		if ev, err := event(br); ev != "data: one" || err != nil {
			t.Fatalf("first event %q, %v", ev, err)
		}
		next <- struct{}{}
		if ev, err := event(br); ev != "data: two" || err != nil {
			t.Fatalf("second event %q, %v", ev, err)
		}
		if b, err := io.ReadAll(br); len(b) != 0 || err != nil {
			t.Fatalf("after the events: %q, %v", b, err)
		}
		resp.Body.Close()
		if n := tr.idleCount(s.URL); n != 1 {
			t.Fatalf("request %d: %d idle, want 1", i, n)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("2 streams dialed %d times, want 1", n)
	}
}

func TestCancelStream(t *testing.T) {
	next := make(chan struct{})
	s := sse(next)
	defer s.Close()
	tr, hc, dials := counted(&Transport{})
	cause := errors.New("the turn was stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if ev, err := event(br); ev != "data: one" || err != nil {
		t.Fatalf("first event %q, %v", ev, err)
	}
	// The server writes nothing more: this read blocks until the cancel.
	read := make(chan error)
	go func() {
		_, err := event(br)
		read <- err
	}()
	cancel(cause)
	err = <-read
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("read after cancel: %v, want it to wrap %v and its cause", err, context.Canceled)
	}
	resp.Body.Close()
	if n := tr.idleCount(s.URL); n != 0 {
		t.Fatalf("%d idle after a cancelled stream, want 0", n)
	}
	close(next)
	get(t, hc, s.URL)
	if n := dials.Load(); n != 2 {
		t.Errorf("dialed %d times, want 2: the cancelled stream's connection was used again", n)
	}
}

func TestCancelBeforeAnswer(t *testing.T) {
	arrived := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server sees the client go
		close(arrived)
		<-r.Context().Done()
	}))
	defer s.Close()
	hc := &http.Client{Transport: &Transport{}}
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-arrived
		cancel(cause)
	}()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader("hello"))
	_, err := hc.Do(req)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("got %v, want it to wrap %v and its cause", err, context.Canceled)
	}
}

func TestServerClosesIdle(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer s.Close()
	tr, hc, dials := counted(&Transport{})
	get(t, hc, s.URL)
	s.CloseClientConnections()
	// A body that cannot be sent again: the request can only succeed if
	// the closed connection is found closed before it is written to, or
	// is retried on a new connection with its body made again.
	for _, rewindable := range []bool{true, false} {
		body := io.Reader(strings.NewReader("hello"))
		if !rewindable {
			wait(t, tr, s.URL)
			body = io.NopCloser(body)
		}
		req, _ := http.NewRequest(http.MethodPost, s.URL, body)
		req.ContentLength = 5
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.CloseClientConnections()
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("dialed %d times, want 3", n)
	}
}

// wait waits until the idle connection to key has something to read (its
// end, or bytes): the server's close or junk has arrived.
func wait(t *testing.T, tr *Transport, key string) {
	t.Helper()
	tr.mu.Lock()
	cs := tr.idle[key]
	tr.mu.Unlock()
	if len(cs) != 1 {
		t.Fatalf("%d idle, want 1", len(cs))
	}
	// Done when a peek finds the end or a byte; else wait for the poller
	// to say the socket is readable, and peek again.
	err := cs[0].sys.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rawServer accepts connections and answers each request with answer(n,
// conn), n counting the requests on all connections from 0; answer
// returns false to close the connection without a word.
func rawServer(t *testing.T, answer func(n int, c net.Conn) bool) net.Listener {
	t.Helper()
	return h1test.Serve(t, func(n int, c net.Conn, _ *http.Request, _ []byte) bool { return answer(n, c) })
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func TestJunkAfterAnswer(t *testing.T) {
	junk := make(chan net.Conn, 1)
	l := rawServer(t, func(n int, c net.Conn) bool {
		io.WriteString(c, okAnswer)
		if n == 0 {
			junk <- c
		}
		return true
	})
	tr, hc, dials := counted(&Transport{})
	url := "http://" + l.Addr().String()
	get(t, hc, url)
	io.WriteString(<-junk, "HTTP/1.1 200 OK\r\n") // an answer nobody asked for
	wait(t, tr, url)
	get(t, hc, url)
	if n := dials.Load(); n != 2 {
		t.Errorf("dialed %d times, want 2: a connection with junk waiting was used again", n)
	}
}

func TestRetry(t *testing.T) {
	// The second request, on the kept connection, finds it closed without
	// an answer, as when the server closed it idle while the request was
	// on its way.
	l := rawServer(t, func(n int, c net.Conn) bool {
		if n == 1 {
			return false
		}
		io.WriteString(c, okAnswer)
		return true
	})
	url := "http://" + l.Addr().String()
	_, hc, dials := counted(&Transport{})
	get(t, hc, url)
	resp, err := hc.Post(url, "text/plain", bytes.NewReader([]byte("again")))
	if err != nil {
		t.Fatalf("a request whose body can be made again was not sent again: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n := dials.Load(); n != 2 {
		t.Errorf("dialed %d times, want 2", n)
	}

	// Without GetBody, the error comes back.
	l = rawServer(t, func(n int, c net.Conn) bool {
		if n == 1 {
			return false
		}
		io.WriteString(c, okAnswer)
		return true
	})
	url = "http://" + l.Addr().String()
	get(t, hc, url)
	req, _ := http.NewRequest(http.MethodPost, url, io.NopCloser(strings.NewReader("once")))
	req.ContentLength = 4
	if _, err := hc.Do(req); err == nil {
		t.Error("a request whose body cannot be made again was sent again")
	}

	// On a new connection, an error is the server's: not sent again.
	var asked atomic.Int64
	l = rawServer(t, func(n int, c net.Conn) bool { asked.Add(1); return false })
	if _, err := hc.Get("http://" + l.Addr().String()); err == nil {
		t.Error("no error from a server that closes without answering")
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times on new connections, want 1", n)
	}
}

func TestBodyClosedEarly(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 64<<10))
	}))
	defer s.Close()
	_, hc, dials := counted(&Transport{})
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := resp.Body.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
	if _, err := resp.Body.Read(make([]byte, 10)); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("read after close: %v, want %v", err, http.ErrBodyReadAfterClose)
	}
	get(t, hc, s.URL)
	if n := dials.Load(); n != 2 {
		t.Errorf("dialed %d times, want 2: a body closed before its end left its connection in use", n)
	}
}

func TestConnectionClose(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("close") {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, "ok")
	}))
	defer s.Close()
	_, hc, dials := counted(&Transport{})
	get(t, hc, s.URL+"?close") // the server says close
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	req.Close = true // the client says close
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get(t, hc, s.URL)
	get(t, hc, s.URL)
	if n := dials.Load(); n != 3 {
		t.Errorf("dialed %d times, want 3", n)
	}
}

func TestTLS(t *testing.T) {
	var protos sync.Map
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos.Store(r.Proto+" "+r.TLS.NegotiatedProtocol, true)
		io.WriteString(w, "secret")
	}))
	defer s.Close()
	_, hc, dials := counted(&Transport{TLS: &tls.Config{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}})
	for range 3 {
		if got := get(t, hc, s.URL); got != "secret" {
			t.Fatalf("got %q", got)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("dialed %d times, want 1", n)
	}
	protos.Range(func(k, _ any) bool {
		if k != "HTTP/1.1 http/1.1" {
			t.Errorf("spoke %s, want HTTP/1.1 over ALPN http/1.1", k)
		}
		return true
	})
	// Not trusted without the test's roots.
	if _, err := (&http.Client{Transport: &Transport{}}).Get(s.URL); err == nil {
		t.Error("a certificate not trusted was taken")
	}
}

func TestConcurrent(t *testing.T) {
	const n = 8
	var arrived atomic.Int64
	all := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		<-all // every request is in before any is answered
		io.WriteString(w, r.URL.Query().Get("i"))
	}))
	defer s.Close()
	tr, hc, dials := counted(&Transport{MaxIdle: 3})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := hc.Get(fmt.Sprintf("%s/?i=%d", s.URL, i))
			if err != nil {
				t.Error(err)
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != fmt.Sprint(i) || err != nil {
				t.Errorf("request %d answered %q, %v", i, b, err)
			}
		})
	}
	wg.Wait()
	if d := dials.Load(); d != n {
		t.Errorf("dialed %d times, want %d: each request its own connection", d, n)
	}
	if idle := tr.idleCount(s.URL); idle != 3 {
		t.Errorf("%d idle, want MaxIdle, 3", idle)
	}
	hc.CloseIdleConnections()
	if idle := tr.idleCount(s.URL); idle != 0 {
		t.Errorf("%d idle after CloseIdleConnections, want 0", idle)
	}
	get(t, hc, s.URL)
	if d := dials.Load(); d != n+1 {
		t.Errorf("dialed %d times, want %d", d, n+1)
	}
}

func TestHeaderTooLarge(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", 8<<10))
	}))
	defer s.Close()
	hc := &http.Client{Transport: &Transport{MaxHeaderBytes: 4 << 10}}
	_, err := hc.Get(s.URL)
	if !errors.Is(err, ErrHeaderTooLarge) {
		t.Fatalf("got %v, want %v", err, ErrHeaderTooLarge)
	}
	hc = &http.Client{Transport: &Transport{MaxHeaderBytes: 16 << 10}}
	get(t, hc, s.URL)
}

func TestIdleTimeout(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer s.Close()
	var now atomic.Int64 // the clock, in seconds; moved by the test alone
	_, hc, dials := counted(&Transport{IdleTimeout: time.Minute, Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	defer hc.CloseIdleConnections()
	get(t, hc, s.URL)
	now.Add(59)
	get(t, hc, s.URL)
	if n := dials.Load(); n != 1 {
		t.Fatalf("dialed %d times within the idle timeout, want 1", n)
	}
	now.Add(61)
	get(t, hc, s.URL)
	if n := dials.Load(); n != 2 {
		t.Fatalf("dialed %d times, want 2: a connection idle past its timeout was used", n)
	}
}

func TestBadRequest(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("X-A"))
	}))
	defer s.Close()
	hc := &http.Client{Transport: &Transport{}}
	for _, h := range [][2]string{{"X-A", "one\r\nX-Injected: two"}, {"X A", "b"}, {"", "b"}} {
		req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
		req.Header[h[0]] = []string{h[1]}
		if _, err := hc.Do(req); err == nil {
			t.Errorf("header %q: %q was sent", h[0], h[1])
		}
	}
	if _, err := hc.Get("ftp://" + s.Listener.Addr().String()); err == nil {
		t.Error("an ftp URL was asked")
	}
}

// childEnv, set to 1, makes the test binary serve as childServer's
// server.
const childEnv = "H1_TEST_CHILD_SERVER"

// serveChild serves HTTP on loopback until its standard input closes,
// having written its address on its standard output.
func serveChild() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	go http.Serve(l, http.HandlerFunc(serveCall))
	io.Copy(io.Discard, os.Stdin)
}

// serveCall answers like a model proxy: it reads the request's body and
// streams 8 events of 508 bytes, each flushed.
func serveCall(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	for range 8 {
		io.WriteString(w, "data: "+strings.Repeat("x", 500)+"\n\n")
		w.(http.Flusher).Flush()
	}
}

// childServer starts this test binary as a server in a process of its own
// and returns its URL: this process then runs no goroutine of the
// server's, so what it counts is the client's alone.
func childServer(t testing.TB) string {
	t.Helper()
	return "http://" + fleettest.Peer(t, childEnv+"=1")
}

// post sends one model-like call through hc and reads its stream.
func post(t testing.TB, hc *http.Client, url string, body []byte) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != 8*508 {
		t.Fatalf("read %d bytes, %v", n, err)
	}
}

func TestNoGoroutine(t *testing.T) {
	url := childServer(t)
	body := bytes.Repeat([]byte("y"), 2<<10)
	// The same loop counts another transport's goroutines: the count can
	// see a connection's goroutines, and sees none of this one's.
	std := &http.Transport{}
	defer std.CloseIdleConnections()
	// net/http's goes second: its goroutines end after it closes its
	// connections, not when.
	for _, rt := range []http.RoundTripper{&Transport{}, std} {
		hc := &http.Client{Transport: rt}
		before := runtime.NumGoroutine()
		for range 100 {
			post(t, hc, url, body)
		}
		after := runtime.NumGoroutine()
		switch rt.(type) {
		case *Transport:
			if after != before {
				t.Errorf("%d goroutines before the first request, %d after 100 with a connection idle", before, after)
			}
		default:
			if after < before+2 {
				t.Fatalf("net/http's transport: %d goroutines before, %d after: the count does not see a connection's goroutines", before, after)
			}
		}
		hc.CloseIdleConnections()
	}
}

// TestAllocs is the client's allocation budget for a POST and its
// streamed answer, the server in a process of its own.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	url := childServer(t)
	body := bytes.Repeat([]byte("y"), 2<<10)
	hc := &http.Client{Transport: &Transport{}}
	defer hc.CloseIdleConnections()
	post(t, hc, url, body)
	const budget = 30
	n := testing.AllocsPerRun(100, func() { post(t, hc, url, body) })
	t.Logf("%.0f allocations a call", n)
	if n > budget {
		t.Errorf("%.0f allocations a call, want at most %d", n, budget)
	}
}

// Bodies smaller and larger than the write buffer, plain and over TLS,
// reach the server whole, each followed by the next request on the same
// connection.
func TestBodySizes(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(w, "%d %x", len(b), sum)
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	roots := secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for _, s := range []struct {
		url string
		tr  *Transport
	}{{plain.URL, &Transport{}}, {secure.URL, &Transport{TLS: &tls.Config{RootCAs: roots}}}} {
		_, hc, dials := counted(s.tr)
		for _, n := range []int{0, 1, bufSize - 200, bufSize, bufSize + 1, 300 << 10} {
			body := bytes.Repeat([]byte("abcdefgh"), n/8+1)[:n]
			resp, err := hc.Post(s.url, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s, %d bytes: %v", s.url, n, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("%d %x", n, sha256.Sum256(body)); string(got) != want {
				t.Errorf("%s, %d bytes: the server read %q, want %q", s.url, n, got, want)
			}
		}
		if d := dials.Load(); d != 1 {
			t.Errorf("%s: dialed %d times, want 1", s.url, d)
		}
	}
}
