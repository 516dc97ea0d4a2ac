package httpconn

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// "Expect: 100-continue" is answered "100 Continue" once the handler reads
// the body, and only then does the client send it; a handler that never
// reads it answers, and its connection is closed (the client told so); a
// handler that sent its header before reading gets the body without a
// "100 Continue" in the middle of its answer.
func TestExpectContinue(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ignore":
			io.WriteString(w, "ignored")
			return
		case "/flush-first":
			io.WriteString(w, "first ")
			w.(http.Flusher).Flush()
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("%s: reading the body: %v", r.URL.Path, err)
		}
		fmt.Fprintf(w, "read %s", b)
	})})

	t.Run("read", func(t *testing.T) {
		c := dial(t, addr)
		c.send("POST /read HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		if resp := c.head("POST"); resp.StatusCode != http.StatusContinue {
			t.Fatalf("answered %d, want 100", resp.StatusCode)
		}
		c.send("hello")
		if resp, body := c.answer("POST"); body != "read hello" || resp.Close {
			t.Errorf("answered %q, close %v", body, resp.Close)
		}
		c.send("POST /read HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n")
		if resp, body := c.answer("POST"); resp.StatusCode != http.StatusOK || body != "read " {
			t.Errorf("with no body to ask for, answered %d %q", resp.StatusCode, body)
		}
	})
	t.Run("never read", func(t *testing.T) {
		c := dial(t, addr)
		c.send("POST /ignore HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		if resp, body := c.answer("POST"); resp.StatusCode != http.StatusOK || body != "ignored" || !resp.Close {
			t.Errorf("answered %d %q, close %v", resp.StatusCode, body, resp.Close)
		}
		c.closed()
	})
	t.Run("header sent first", func(t *testing.T) {
		c := dial(t, addr)
		c.send("POST /flush-first HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		resp := c.head("POST")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("answered %d, want 200", resp.StatusCode)
		}
		c.send("hello") // unasked, as a client may
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "first read hello" {
			t.Errorf("answered %q, %v", b, err)
		}
		if !resp.Close {
			t.Error("connection kept with a body never asked for")
		}
		c.closed()
	})
}

// A body its handler left unread is dropped by the server, and the
// connection serves the next request, unless more than maxDrain of it is
// left: then the connection is closed, the client told when the length is
// known before the answer goes.
func TestUnreadBody(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "unread")
	})})
	for _, tt := range []struct {
		name    string
		size    int
		chunked bool
		kept    bool
		told    bool // the answer says Connection: close
	}{
		{"small", 10, false, true, false},
		{"under maxDrain", maxDrain - 1<<10, false, true, false},
		{"under maxDrain, chunked", maxDrain - 1<<10, true, true, false},
		{"over maxDrain", maxDrain + 40<<10, false, false, true},
		{"over maxDrain, chunked", maxDrain + 40<<10, true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			body := strings.Repeat("u", tt.size)
			req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", tt.size, body)
			if tt.chunked {
				req = fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", tt.size, body)
			}
			wrote := make(chan error, 1)
			go func() {
				_, err := io.WriteString(c.nc, req)
				wrote <- err
			}()
			resp, got := c.answer("POST")
			if got != "unread" || resp.Close != tt.told {
				t.Errorf("answered %q, close %v; want close %v", got, resp.Close, tt.told)
			}
			if !tt.kept {
				c.closed()
				recv(t, wrote) // a reset may end the write
				return
			}
			if err := recv(t, wrote); err != nil {
				t.Fatal(err)
			}
			c.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
			if _, got := c.answer("GET"); got != "unread" {
				t.Errorf("the next request answered %q", got)
			}
		})
	}
}

// A connection's read buffer goes back to the pool once the request's body
// is read to its end, unless bytes past the request wait in it.
func TestBufferGivenBack(t *testing.T) {
	held := make(chan bool, 2)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		if bd, ok := r.Body.(*body); ok {
			held <- bd.c.br != nil
		}
		fmt.Fprintf(w, "%s %s", r.URL.Path, b)
	})})
	c := dial(t, addr)
	c.send("POST /alone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	if _, body := c.answer("POST"); body != "/alone hello" {
		t.Errorf("answered %q", body)
	}
	if recv(t, held) {
		t.Error("the read buffer held once the body was read")
	}
	c.send("POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + "POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbye")
	for _, want := range []string{"/first hello", "/second bye"} {
		if _, body := c.answer("POST"); body != want {
			t.Errorf("answered %q, want %q", body, want)
		}
	}
	if !recv(t, held) {
		t.Error("the read buffer given back with the next request in it")
	}
	if recv(t, held) {
		t.Error("the read buffer held once the last body was read")
	}
}

// parse reads one request from raw.
func parse(t *testing.T, raw string) *http.Request {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return req
}

func TestMalformed(t *testing.T) {
	for _, tt := range []struct{ req, want string }{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"GET http://x/ HTTP/1.1\r\n\r\n", ""},
		{"GET / HTTP/1.0\r\n\r\n", ""},
		{"GET / HTTP/1.1\r\n\r\n", "missing required Host header"},
		{"GET / HTTP/1.1\r\nHost:\r\n\r\n", "missing required Host header"},
	} {
		if got := malformed(parse(t, tt.req)); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.req, got, tt.want)
		}
	}
}

func TestExpectContinuePolicy(t *testing.T) {
	for _, tt := range []struct {
		req        string
		expect, ok bool
	}{
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", false, true},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", true, true},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 5\r\n\r\n", true, true},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n", true, true},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n", false, true},
		{"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n", false, true},
		{"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", false, false},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 5\r\n\r\n", false, false},
	} {
		expect, ok := expectContinue(parse(t, tt.req))
		if expect != tt.expect || ok != tt.ok {
			t.Errorf("%q: %v, %v; want %v, %v", tt.req, expect, ok, tt.expect, tt.ok)
		}
	}
}
