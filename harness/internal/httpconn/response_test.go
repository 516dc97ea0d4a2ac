package httpconn

import (
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
)

// An answer held whole goes with its Content-Length; one over bufSize
// goes chunked unless its handler set its length; one its handler cut
// short of the length it set closes the connection. Either way a
// Content-Type not set is sniffed from what came first.
func TestAnswerLength(t *testing.T) {
	html := "<!DOCTYPE html><html><body>" + strings.Repeat("x", 10<<10) + "</body></html>"
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			io.WriteString(w, "hello")
		case "/big": // in pieces, the first ones held
			for i := range 10 {
				io.WriteString(w, strings.Repeat(strconv.Itoa(i), 1<<10))
			}
		case "/big-in-one":
			io.WriteString(w, html)
		case "/big-with-length":
			w.Header().Set("Content-Length", strconv.Itoa(10<<10))
			for i := range 10 {
				io.WriteString(w, strings.Repeat(strconv.Itoa(i), 1<<10))
			}
		case "/short":
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, strings.Repeat("s", 50))
		case "/over":
			w.Header().Set("Content-Length", "3")
			if _, err := io.WriteString(w, "four"); !errors.Is(err, http.ErrContentLength) {
				t.Errorf("writing past the Content-Length: %v", err)
			}
			io.WriteString(w, "abc")
		case "/empty":
		}
	})})
	var pieces strings.Builder
	for i := range 10 {
		pieces.WriteString(strings.Repeat(strconv.Itoa(i), 1<<10))
	}
	c := dial(t, addr)
	for _, tt := range []struct {
		path    string
		body    string
		length  int64 // -1: chunked
		typ     string
		chunked bool
	}{
		{"/small", "hello", 5, "text/plain; charset=utf-8", false},
		{"/empty", "", 0, "", false},
		{"/big", pieces.String(), -1, "text/plain; charset=utf-8", true},
		{"/big-in-one", html, -1, "text/html; charset=utf-8", true},
		{"/big-with-length", pieces.String(), 10 << 10, "text/plain; charset=utf-8", false},
		{"/over", "abc", 3, "text/plain; charset=utf-8", false},
	} {
		c.send("GET " + tt.path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := c.answer("GET")
		if body != tt.body {
			t.Errorf("%s: answered %d bytes, want %d", tt.path, len(body), len(tt.body))
		}
		if resp.ContentLength != tt.length || (resp.TransferEncoding != nil) != tt.chunked || resp.Close {
			t.Errorf("%s: Content-Length %d, Transfer-Encoding %q, close %v; want %d, chunked %v, kept",
				tt.path, resp.ContentLength, resp.TransferEncoding, resp.Close, tt.length, tt.chunked)
		}
		if got := resp.Header.Get("Content-Type"); got != tt.typ {
			t.Errorf("%s: Content-Type %q, want %q", tt.path, got, tt.typ)
		}
		if resp.Header.Get("Date") == "" {
			t.Errorf("%s: no Date", tt.path)
		}
	}

	c.send("GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := c.head("GET")
	if b, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) || len(b) != 50 {
		t.Errorf("an answer cut short: read %d bytes, %v; want 50 and io.ErrUnexpectedEOF", len(b), err)
	}
	c.closed()
}

// Flush sends the header and what was written, before the handler ends:
// the client reads the first event while the handler waits for it to.
func TestFlush(t *testing.T) {
	next := make(chan struct{})
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, "data: two\n\n")
	})})
	c := dial(t, addr)
	c.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := c.head("GET")
	if resp.TransferEncoding == nil || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("Transfer-Encoding %q, Content-Type %q", resp.TransferEncoding, resp.Header.Get("Content-Type"))
	}
	first := make([]byte, len("data: one\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "data: one\n\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	close(next)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != "data: two\n\n" {
		t.Errorf("second event %q, %v", rest, err)
	}
	c.send("GET /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if _, body := c.answer("GET"); body != "data: one\n\ndata: two\n\n" {
		t.Errorf("the next request on the connection answered %q", body)
	}
}

// A HEAD's answer and a 204 have no body: the next answer on the
// connection follows their header.
func TestNoBody(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
			if _, err := io.WriteString(w, "not sent"); !errors.Is(err, http.ErrBodyNotAllowed) {
				t.Errorf("writing a 204's body: %v", err)
			}
		case "/flushed":
			w.(http.Flusher).Flush()
			io.WriteString(w, "not sent")
		default:
			io.WriteString(w, "not sent to a HEAD")
		}
	})})
	c := dial(t, addr)
	for _, tt := range []struct{ method, path string }{{"HEAD", "/"}, {"HEAD", "/flushed"}, {"GET", "/204"}} {
		c.send(tt.method + " " + tt.path + " HTTP/1.1\r\nHost: x\r\n\r\n" + "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, _ := c.answer(tt.method)
		if resp.Header.Get("Content-Length") != "" || resp.TransferEncoding != nil || resp.Close {
			t.Errorf("%s %s: Content-Length %q, Transfer-Encoding %q, close %v", tt.method, tt.path, resp.Header.Get("Content-Length"), resp.TransferEncoding, resp.Close)
		}
		if resp, body := c.answer("GET"); resp.StatusCode != http.StatusOK || body != "not sent to a HEAD" {
			t.Errorf("after %s %s: %d %q", tt.method, tt.path, resp.StatusCode, body)
		}
	}
}

// A Content-Length the handler set after WriteHeader, too late to be the
// answer's, is not sent beside its chunks; a Connection: close it set is
// kept to.
func TestLateHeader(t *testing.T) {
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/late-length":
			w.WriteHeader(http.StatusOK)
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
			w.(http.Flusher).Flush()
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		}
	})})
	c := dial(t, addr)
	c.send("GET /late-length HTTP/1.1\r\nHost: x\r\n\r\n")
	// Read as it is: http.ReadResponse drops a Content-Length beside chunks.
	tp := textproto.NewReader(c.br)
	if line, err := tp.ReadLine(); err != nil || line != "HTTP/1.1 200 OK" {
		t.Fatalf("status line %q, %v", line, err)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("Transfer-Encoding") != "chunked" || h.Get("Content-Length") != "" {
		t.Errorf("Transfer-Encoding %q beside Content-Length %q", h.Get("Transfer-Encoding"), h.Get("Content-Length"))
	}
	body := make([]byte, len("5\r\nhello\r\n0\r\n\r\n"))
	if _, err := io.ReadFull(c.br, body); err != nil || string(body) != "5\r\nhello\r\n0\r\n\r\n" {
		t.Errorf("body %q, %v", body, err)
	}
	c.send("GET /close HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := c.answer("GET"); body != "bye" || !resp.Close {
		t.Errorf("answered %q, close %v", body, resp.Close)
	}
	c.closed()
}

func TestHasToken(t *testing.T) {
	for _, tt := range []struct {
		v, token string
		want     bool
	}{
		{"close", "close", true},
		{"Close", "close", true},
		{"keep-alive, close", "close", true},
		{" close ,upgrade", "close", true},
		{"upgrade,,close", "close", true},
		{"closed", "close", false},
		{"keep-alive", "close", false},
		{"", "close", false},
		{",", "close", false},
	} {
		if got := hasToken(tt.v, tt.token); got != tt.want {
			t.Errorf("hasToken(%q, %q) = %v, want %v", tt.v, tt.token, got, tt.want)
		}
	}
}

func TestAppendStatus(t *testing.T) {
	for _, tt := range []struct {
		code int
		want string
	}{
		{200, "HTTP/1.1 200 OK\r\n"},
		{204, "HTTP/1.1 204 No Content\r\n"},
		{400, "HTTP/1.1 400 Bad Request\r\n"},
		{417, "HTTP/1.1 417 Expectation Failed\r\n"},
		{431, "HTTP/1.1 431 Request Header Fields Too Large\r\n"},
		{599, "HTTP/1.1 599 status code 599\r\n"},
	} {
		if got := string(appendStatus([]byte("x"), tt.code)); got != "x"+tt.want {
			t.Errorf("appendStatus(%d) = %q, want %q", tt.code, got, "x"+tt.want)
		}
	}
}
