package httpconn

import (
	"io"
	"net/http"
	"strings"
)

// malformed says what makes req one to refuse 400 before its handler sees
// it, or "".
func malformed(req *http.Request) string {
	if req.ProtoAtLeast(1, 1) && req.Host == "" {
		return "missing required Host header"
	}
	return ""
}

// expectContinue says whether req asks "100 Continue" before its body is
// sent; ok is false for an expectation not met (any other).
func expectContinue(req *http.Request) (expect, ok bool) {
	e := req.Header.Get("Expect")
	switch {
	case e == "":
		return false, true
	case strings.EqualFold(e, "100-continue") && req.ProtoAtLeast(1, 1):
		return req.ContentLength != 0, true
	default:
		return false, false
	}
}

// body is a request's body as its handler reads it: "100 Continue" is
// sent before the first read when asked and no byte of the answer went
// yet, and once read to its end the connection's read buffer goes back to
// the pool.
type body struct {
	c      *conn
	w      *response // the request's answer
	rc     io.ReadCloser
	size   int64 // the request's Content-Length; -1 unknown (chunked)
	n      int64 // read so far
	expect bool  // 100 Continue asked and not sent
	eof    bool  // read to its end: rc is not read again
}

func (b *body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.expect && !b.w.sent {
		// Once the answer's header went, a 100 Continue after it would
		// be read as its body: the caller, not asked, may send the body
		// anyway.
		b.expect = false
		if _, err := io.WriteString(b.c.nc, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return 0, err
		}
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
		b.c.bodyRead()
	}
	return n, err
}

// Close leaves what is unread for the connection to drop (drained).
func (b *body) Close() error { return nil }

// unkept says whether what of b its handler left (so far) keeps its
// connection from serving the next request: the caller was never asked to
// send it, or more than maxDrain of it is known to be left.
func (b *body) unkept() bool {
	return b != nil && !b.eof && (b.expect || b.size >= 0 && b.size-b.n > maxDrain)
}

// drained reads and drops what of b its handler left, so its connection
// can serve the next request; false: too much was left, or the caller was
// never asked to send it, and the connection is closed.
func (b *body) drained() bool {
	if b == nil || b.eof {
		return true
	}
	if b.unkept() {
		return false
	}
	n, _ := io.CopyN(io.Discard, b, maxDrain+1)
	return n <= maxDrain && b.eof
}
