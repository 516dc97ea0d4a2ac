package httpconn

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"lnk.dev/linkharness/harness/internal/osfile"
)

// DefaultMaxHeaderBytes is a request header's limit when
// Server.MaxHeaderBytes is not set, as net/http's.
const DefaultMaxHeaderBytes = 1 << 20

// bufSize is the size of a request's read buffer and of an answer's write
// buffer, each pooled; an answer of at most bufSize, its handler done,
// goes with its Content-Length.
const bufSize = 4 << 10

// maxDrain is how much of a body its handler left unread is read and
// dropped so its connection serves the next request; past it, the
// connection is closed.
const maxDrain = 256 << 10

// Server answers requests on the connections given to ServeConn. Its
// fields are set before the first ServeConn and not changed after. It is
// safe for concurrent use; its zero value, with a Handler, serves with no
// timeouts.
type Server struct {
	Handler http.Handler
	// Log is told a handler's panic; nil, it is not logged.
	Log *slog.Logger

	// MaxHeaderBytes is the most a request's line and header may hold;
	// 0 is DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds a request's line and header, from when
	// its first byte came (a new connection's, from its start);
	// ReadTimeout the whole request with its body; IdleTimeout the wait
	// for the next request (ReadTimeout when not set). 0 is none.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration

	// State, when set, is told each connection's state as net/http's
	// Server.ConnState is: StateNew before its first request, StateActive
	// once a request's first byte came, StateIdle once it was answered and
	// the connection is kept, StateClosed once closed.
	State func(net.Conn, http.ConnState)

	// Watch sees callers leave while their requests' handlers run; nil,
	// a caller leaving is seen only once its answer is written.
	Watch *Watcher
}

// ServeConn answers the requests that come on nc, each with a context
// made from ctx, until nc closes, fails or is let go of; then it closes
// nc.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn) {
	c := &conn{s: s, nc: nc}
	c.lr.nc = nc
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.sys = rc
			c.firstFn = c.readFirst
		}
	}
	if s.Watch != nil && c.sys != nil {
		s.Watch.add(c)
	}
	defer c.close()
	s.state(nc, http.StateNew)
	for first := true; c.await(first); first = false {
		if c.resting {
			c.resting = false
			s.Watch.wake(c)
		}
		s.state(nc, http.StateActive)
		if !c.serve(ctx) {
			return
		}
		if first && c.id != 0 {
			c.resting = true
			s.Watch.rest(c)
		}
		s.state(nc, http.StateIdle)
	}
}

func (s *Server) state(nc net.Conn, st http.ConnState) {
	if s.State != nil {
		s.State(nc, st)
	}
}

// conn is one connection served. Its requests are read and answered by
// ServeConn's goroutine; gone may come from the watcher's at any time.
type conn struct {
	s      *Server
	nc     net.Conn
	sys    syscall.RawConn // nc's descriptor; nil: not a socket
	br     *bufio.Reader   // while a request is read, or bytes past it wait
	lr     limited         // what br reads: nc, limited while a header is read
	id     uint64          // in the watcher; 0 when not watched
	remote string          // nc's far address, once a request asked

	// resting: the watcher tells nothing of it until its next request.
	// Its first answered, a connection rests: its own wait sees its
	// caller leave, and one that carries a message alone (as Link's
	// bridge opens) would wake the watcher's goroutine too as it closes.
	// One that carries a second is kept, watched from then to its close.
	resting bool

	left atomic.Bool // the far end closed: the request running and any next are its own
	mu   sync.Mutex
	// guarded by mu
	cancel context.CancelCauseFunc // the running request's

	// For await's wait, made once per connection.
	firstFn  func(fd uintptr) bool
	gotFirst bool // the wait ended with a request's first bytes in lr
}

// errLeft is the cause of a request's context once its caller closed the
// connection.
var errLeft = errors.New("httpconn: the caller closed the connection")

// Event is told by the epoll set that the far end closed (see Watcher):
// the running request's context is canceled.
func (c *conn) Event(uint64) {
	c.left.Store(true)
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel(errLeft)
	}
	c.mu.Unlock()
}

// await waits for the next request's first byte holding no buffer, within
// ReadHeaderTimeout on a new connection and IdleTimeout after; false: the
// connection ended or timed out.
func (c *conn) await(first bool) bool {
	if c.br != nil && c.br.Buffered() > 0 || len(c.lr.first) > 0 {
		return true
	}
	d := c.s.IdleTimeout
	if first {
		d = c.s.ReadHeaderTimeout
	}
	if d <= 0 {
		d = c.s.ReadTimeout
	}
	setDeadline(c.nc, d)
	if c.sys == nil {
		return true // read at once: a buffer is held while waiting
	}
	c.gotFirst = false
	if err := c.sys.Read(c.firstFn); err != nil {
		return false
	}
	return c.gotFirst // false: the far end closed, or the read failed
}

// readFirst is await's read of the socket: the request's first bytes, read
// into a small pooled buffer that lr hands out before the socket, end the
// wait, as do the socket's end or an error; nothing yet waits for bytes,
// the buffer given back. The bytes are read, not peeked at and read
// again: one call, not two.
func (c *conn) readFirst(fd uintptr) bool {
	b := firsts.Get().(*[]byte)
	n, err := osfile.Read(int(fd), *b)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		firsts.Put(b)
		return false
	case err != nil || n == 0:
		firsts.Put(b)
		return true
	}
	c.lr.firstBuf, c.lr.first, c.gotFirst = b, (*b)[:n], true
	return true
}

// setDeadline bounds nc's reads to d from now; 0, not at all.
func setDeadline(nc net.Conn, d time.Duration) {
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	nc.SetReadDeadline(t)
}

// serve reads one request and answers it; false: the connection is not
// kept.
func (c *conn) serve(ctx context.Context) bool {
	s := c.s
	if c.br == nil {
		c.br = readers.Get().(*bufio.Reader)
		c.br.Reset(&c.lr)
	}
	t0 := time.Now()
	if s.ReadHeaderTimeout > 0 {
		c.nc.SetReadDeadline(t0.Add(s.ReadHeaderTimeout))
	} else {
		setDeadline(c.nc, s.ReadTimeout)
	}
	max := s.MaxHeaderBytes
	if max <= 0 {
		max = DefaultMaxHeaderBytes
	}
	c.lr.n = int64(max) + 4096 // as net/http: the line and header, with room for bufio's read ahead
	req, err := http.ReadRequest(c.br)
	if err != nil {
		switch {
		case c.lr.n <= 0:
			c.refuse(http.StatusRequestHeaderFieldsTooLarge, "request header over the limit")
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), isTimeout(err):
		default:
			c.refuse(http.StatusBadRequest, err.Error())
		}
		return false
	}
	c.lr.n = math.MaxInt64
	if s.ReadTimeout > 0 {
		c.nc.SetReadDeadline(t0.Add(s.ReadTimeout))
	} else {
		c.nc.SetReadDeadline(time.Time{})
	}
	if why := malformed(req); why != "" {
		c.refuse(http.StatusBadRequest, why)
		return false
	}
	expect, ok := expectContinue(req)
	if !ok {
		c.refuse(http.StatusExpectationFailed, "expectation not met")
		return false
	}
	return c.answer(ctx, req, expect)
}

// answer runs the handler on req and writes its answer; false: the
// connection is not kept.
func (c *conn) answer(ctx context.Context, req *http.Request, expect bool) bool {
	rctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	if c.left.Load() {
		cancel(errLeft)
	}
	req = req.WithContext(rctx)
	if c.remote == "" {
		c.remote = c.nc.RemoteAddr().String()
	}
	req.RemoteAddr = c.remote
	w := &response{c: c, req: req, header: http.Header{}, clen: -1}
	if req.Body != http.NoBody && req.Body != nil {
		w.reqBody = &body{c: c, w: w, rc: req.Body, size: req.ContentLength, expect: expect}
		req.Body = w.reqBody
	} else {
		c.bodyRead() // nothing more of the request to read
	}
	ok := c.handle(w, req)
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
	cancel(context.Canceled)
	if !ok {
		w.abandon()
		return false
	}
	return w.finish() && !c.left.Load() && w.reqBody.drained()
}

// handle calls the handler; false: it panicked.
func (c *conn) handle(w *response, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler && c.s.Log != nil {
				c.s.Log.Error("handler panicked", "method", req.Method, "path", req.URL.Path, "panic", p)
			}
			ok = false
		}
	}()
	c.s.Handler.ServeHTTP(w, req)
	return true
}

// refuse answers a request that was never handed to the handler, and the
// connection is closed after.
func (c *conn) refuse(code int, why string) {
	b := make([]byte, 0, 160+len(why))
	b = appendStatus(b, code)
	b = append(b, "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: "...)
	b = appendInt(b, int64(len(why)+1), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, why...)
	b = append(b, '\n')
	c.nc.Write(b)
}

// bodyRead is told a request's body was read to its end, or that it has
// none: its read buffer goes back to the pool unless bytes past the
// request wait in it.
func (c *conn) bodyRead() {
	if c.br != nil && c.br.Buffered() == 0 {
		c.br.Reset(nil)
		readers.Put(c.br)
		c.br = nil
	}
}

func (c *conn) close() {
	if c.s.Watch != nil && c.id != 0 {
		c.s.Watch.remove(c)
	}
	c.nc.Close()
	if c.br != nil {
		c.br.Reset(nil)
		readers.Put(c.br)
		c.br = nil
	}
	c.lr.giveFirst()
	c.s.state(c.nc, http.StateClosed)
}

// limited is a conn's reader of its socket, refusing past n bytes: the
// first bytes await read, then the socket.
type limited struct {
	nc       net.Conn
	n        int64
	first    []byte  // what await read and is not yet read from here
	firstBuf *[]byte // first's buffer, given back once it is read
}

// giveFirst gives first's buffer back to the pool.
func (l *limited) giveFirst() {
	if l.firstBuf != nil {
		firsts.Put(l.firstBuf)
	}
	l.first, l.firstBuf = nil, nil
}

// errTooLarge ends a header's read past its limit.
var errTooLarge = errors.New("httpconn: request header over the limit")

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	if len(l.first) > 0 {
		n := copy(p, l.first)
		l.first = l.first[n:]
		l.n -= int64(n)
		if len(l.first) == 0 {
			l.giveFirst()
		}
		return n, nil
	}
	n, err := l.nc.Read(p)
	l.n -= int64(n)
	return n, err
}

// readers are the buffers requests are read through; firsts those the
// first bytes of a request are read into as a connection's wait ends,
// each of firstSize, a request's line and a short header.
var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	firsts  = sync.Pool{New: func() any { b := make([]byte, firstSize); return &b }}
)

const firstSize = 1 << 10

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
