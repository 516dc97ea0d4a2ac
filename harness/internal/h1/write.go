package h1

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// write writes req on c.
func (c *conn) write(req *http.Request) error {
	bw := writers.Get().(*bufio.Writer)
	c.gather = gather{nc: c.nc}
	bw.Reset(&c.gather)
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
		c.gather = gather{}
	}()
	var err error
	if plain(req) {
		err = writeRequest(bw, &c.gather, req)
	} else {
		err = req.Write(bw)
	}
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the request: %w", err)
	}
	return nil
}

// plain says whether writeRequest writes req: a request of known length
// without trailers or a transfer encoding of its own. Others are written
// by req.Write.
func plain(req *http.Request) bool {
	return req.ContentLength >= 0 && (req.ContentLength > 0 || req.Body == nil || req.Body == http.NoBody) &&
		len(req.TransferEncoding) == 0 && len(req.Trailer) == 0
}

// writeRequest writes req's line, header and body to bw, as req.Write
// would with Content-Length. A body larger than bw has room for goes
// straight to g, bw's writer, with the head flushed into g ahead of it: a
// model request of tens or hundreds of kilobytes is written with its head
// in one call, not copied through the buffer a buffer's length at a time,
// and the far end is woken once. The head is written by a function of its
// own, whose frame is gone while the body is: a turn's stack is deepest
// there (see writeHead).
func writeRequest(bw *bufio.Writer, g *gather, req *http.Request) error {
	if err := writeHead(bw, req); err != nil {
		return err
	}
	if req.ContentLength == 0 {
		return nil
	}
	if req.Body == nil {
		return fmt.Errorf("%w: ContentLength %d without a body", errRequest, req.ContentLength)
	}
	dst := io.Writer(bw)
	if req.ContentLength > int64(bw.Available()) {
		g.hold = true
		bw.Flush() // into g, which holds it for the body's first write
		dst = g
	}
	n, err := io.Copy(dst, req.Body)
	if err == nil {
		err = g.release()
	}
	if err != nil {
		return fmt.Errorf("writing the request's body: %w", err)
	}
	if n != req.ContentLength {
		return fmt.Errorf("%w: ContentLength %d with a body of %d bytes", errRequest, req.ContentLength, n)
	}
	return nil
}

// gather is what a request is written to: its connection, but for a head
// held (hold set before the head is flushed into it), which goes with the
// next write in one writev.
type gather struct {
	nc   net.Conn
	hold bool
	head []byte // the head held: bw's buffer, untouched until the request is written
}

func (g *gather) Write(p []byte) (int, error) {
	switch {
	case g.hold:
		g.hold, g.head = false, p
		return len(p), nil
	case g.head == nil:
		return g.nc.Write(p)
	}
	head := len(g.head)
	bufs := net.Buffers{g.head, p}
	g.head = nil
	n, err := bufs.WriteTo(g.nc)
	return max(int(n)-head, 0), err
}

// release writes the head held, if nothing was written after it.
func (g *gather) release() error {
	if g.head == nil {
		return nil
	}
	_, err := g.nc.Write(g.head)
	g.head = nil
	return err
}

// writeHead writes req's line and header to bw, and the blank line after
// them. Its frame (the header's iteration, the errors' words) is the
// largest of a model call's, so it is not on the stack while the body is
// written.
//
//go:noinline
func writeHead(bw *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validValue(host) {
		return fmt.Errorf("%w: host %q", errRequest, host)
	}
	uri := req.URL.RequestURI()
	if !validValue(req.Method) || !validValue(uri) {
		return fmt.Errorf("%w: %q %q", errRequest, req.Method, uri)
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	if _, has := req.Header["User-Agent"]; !has {
		bw.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	if req.ContentLength > 0 || req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), req.ContentLength, 10))
		bw.WriteString("\r\n")
	}
	if req.Close {
		bw.WriteString("Connection: close\r\n")
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // said above, or not by a header
		case "Connection":
			if req.Close {
				continue
			}
		}
		if !validName(k) {
			return fmt.Errorf("%w: header name %q", errRequest, k)
		}
		for _, v := range vs {
			if !validValue(v) {
				return fmt.Errorf("%w: header %s's value %q", errRequest, k, v)
			}
			if k == "User-Agent" && v == "" {
				continue // set empty: no User-Agent at all
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
	return nil
}

// validName says whether k is a header name (a token).
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || c == ':' || c == '(' || c == ')' || c == '<' || c == '>' || c == '@' ||
			c == ',' || c == ';' || c == '\\' || c == '"' || c == '/' || c == '[' || c == ']' || c == '?' ||
			c == '=' || c == '{' || c == '}' {
			return false
		}
	}
	return true
}

// validValue says whether v can be written on a request's line or as a
// header's value: no control byte but a tab, so nothing ends the line.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
