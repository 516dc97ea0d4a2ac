package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"lnk.dev/linkharness/harness/internal/osfile"
)

// bufSize is the size of a connection's read buffer and of the buffer a
// request is written through, both pooled.
const bufSize = 8 << 10

// dial opens a connection to dst, shaking hands over TLS for https.
func (t *Transport) dial(ctx context.Context, dst dest) (*conn, error) {
	dial := t.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	raw, err := dial(ctx, "tcp", dst.addr)
	if err != nil {
		return nil, err
	}
	c := &conn{t: t, key: dst.key, raw: raw, nc: raw}
	if dst.tls {
		cfg := &tls.Config{}
		if t.TLS != nil {
			cfg = t.TLS.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = dst.server
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
			raw.Close()
			return nil, fmt.Errorf("h1: %s offers %q, not http/1.1", dst.addr, p)
		}
		c.nc = tc
	}
	if sc, ok := raw.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.sys = rc
			c.peekFn = c.peek
			if c.nc == raw {
				c.first.read = c.readFirst
			}
		}
	}
	c.abortFn = c.abort
	return c, nil
}

// conn is one connection. Its request and answer are used by one
// goroutine at a time, as the Transport hands it out; abort may come from
// the request context's goroutine at any time.
type conn struct {
	t    *Transport
	key  string
	raw  net.Conn // the TCP connection
	nc   net.Conn // what requests are written to: raw, or TLS over it
	br   *bufio.Reader
	sys  syscall.RawConn // raw's descriptor, for open; nil: not a socket
	left int64           // what may still be read before ErrHeaderTooLarge
	got  int64           // bytes read of this request's answer

	reused    bool
	idleSince time.Time

	first answerHead // the answer's first bytes (awaitAnswer)

	gather gather // what a request is written to, while it is

	// For open and abort, made once per connection.
	peekFn   func(fd uintptr) bool
	peekByte [1]byte
	peekN    uintptr
	peekErr  syscall.Errno
	abortFn  func()
}

// answerHead is an answer's first bytes, read as they come before a read
// buffer is taken for the rest (awaitAnswer): into a pooled buffer taken
// only then where the socket is read bare, else into own; and that
// read's error.
type answerHead struct {
	own   [headSize]byte
	bytes []byte  // those not yet read through the read buffer
	buf   *[]byte // the pooled buffer they were read into, if any
	err   error   // the read's error, the next Read's
	read  func(fd uintptr) bool
}

// Read reads the connection for its buffered reader, counting what came
// and refusing past the header's limit.
func (c *conn) Read(p []byte) (int, error) {
	if len(c.first.bytes) > 0 {
		n := copy(p, c.first.bytes)
		if c.first.bytes = c.first.bytes[n:]; len(c.first.bytes) == 0 {
			c.giveFirst()
		}
		return n, nil
	}
	if c.first.err != nil {
		err := c.first.err
		c.first.err = nil
		return 0, err
	}
	if c.left <= 0 {
		return 0, ErrHeaderTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.nc.Read(p)
	c.left -= int64(n)
	c.got += int64(n)
	return n, err
}

// headSize is how much of an answer a connection over TLS reads before it
// takes a read buffer: an answer's status line and a short header.
const headSize = 256

// firstSize is the size of the buffers an answer's first bytes are read
// into on a socket read bare (firsts).
const firstSize = 1 << 10

// readers and writers are the buffers requests are written through and
// answers read through: a connection holds a reader only while in use.
// firsts are those an answer's first bytes are read into, on a socket
// read bare, as they come: firstSize each, an answer's header and its
// first events.
var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
	firsts  = sync.Pool{New: func() any { b := make([]byte, firstSize); return &b }}
)

// roundTrip writes req on c and reads the answer's header. On an error c
// is closed.
func (c *conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.abortFn)
	}
	c.got = 0
	err := c.write(req)
	closeBody(req)
	if err != nil {
		stop()
		c.close()
		return nil, err
	}
	max := c.t.MaxHeaderBytes
	if max <= 0 {
		max = DefaultMaxHeaderBytes
	}
	c.left = max
	if c.br == nil {
		c.awaitAnswer()
		c.br = readers.Get().(*bufio.Reader)
		c.br.Reset(c)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		stop()
		c.close()
		if c.left <= 0 {
			return nil, fmt.Errorf("%w: over %d bytes", ErrHeaderTooLarge, max)
		}
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	c.left = math.MaxInt64
	b := &body{c: c, rc: resp.Body, stop: stop, ctx: ctx, keep: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.end(true)
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// open says whether an idle c is still open, from one non-blocking peek
// at its socket: the server's end or any byte waiting (no answer is due)
// says it is not.
func (c *conn) open() bool {
	if c.sys == nil {
		return true
	}
	if err := c.sys.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekErr == syscall.EAGAIN || c.peekErr == syscall.EWOULDBLOCK
}

// peek is open's look at the socket.
func (c *conn) peek(fd uintptr) bool {
	n, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.peekByte[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	c.peekN, c.peekErr = n, errno
	return true // done, whatever it found: never wait
}

// awaitAnswer reads the first bytes of the answer to a request written on
// c, and a read buffer is taken only once they came: a model may think for
// seconds, and a turn waiting for it then holds no buffer. A socket read
// bare is read into a pooled buffer once it is readable, so a short
// answer comes in one read; a connection over TLS reads into its own
// small buffer. The bytes, or the read's error, are the next Read's.
func (c *conn) awaitAnswer() {
	if c.first.read != nil {
		c.first.bytes, c.first.err = nil, nil
		if err := c.sys.Read(c.first.read); err != nil {
			c.first.err = err
		}
		return
	}
	n, err := c.Read(c.first.own[:])
	c.first.bytes, c.first.err = c.first.own[:n], err
	if n > 0 {
		c.first.err = nil // a short read's error comes again at the next
	}
}

// readFirst is awaitAnswer's read of the socket: the answer's first bytes,
// read into a pooled buffer taken for the read and given back at once
// when nothing came yet (false: wait until the socket is readable).
func (c *conn) readFirst(fd uintptr) bool {
	b := firsts.Get().(*[]byte)
	p := (*b)[:min(int64(len(*b)), max(c.left, 1))]
	n, err := osfile.Read(int(fd), p)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		firsts.Put(b)
		return false
	case err != nil:
		firsts.Put(b)
		c.first.err = &net.OpError{Op: "read", Net: "tcp", Source: c.raw.LocalAddr(), Addr: c.raw.RemoteAddr(), Err: os.NewSyscallError("read", err)}
		return true
	case n == 0:
		firsts.Put(b)
		c.first.err = io.EOF
		return true
	}
	c.left -= int64(n)
	c.got += int64(n)
	c.first.buf, c.first.bytes = b, p[:n]
	return true
}

// giveFirst gives back the buffer the answer's first bytes were read into.
func (c *conn) giveFirst() {
	if c.first.buf != nil {
		firsts.Put(c.first.buf)
		c.first.buf = nil
	}
}

// abort closes the TCP connection under whatever reads or writes it, for
// a request whose context is done.
func (c *conn) abort() { c.raw.Close() }

// close closes c for good.
func (c *conn) close() {
	c.nc.Close()
	c.br = nil
	c.first.bytes = nil
	c.giveFirst()
}
