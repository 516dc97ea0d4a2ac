package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Defaults for a Transport's zero fields.
const (
	DefaultMaxIdle        = 4
	DefaultIdleTimeout    = 90 * time.Second
	DefaultMaxHeaderBytes = 1 << 20
)

// ErrHeaderTooLarge comes when an answer's status line and header run
// past the Transport's MaxHeaderBytes; the connection is closed.
var ErrHeaderTooLarge = errors.New("h1: response header too large")

// bufSize is the size of a connection's read buffer and of the buffer a
// request is written through, both pooled.
const bufSize = 8 << 10

// Transport is an http.RoundTripper speaking HTTP/1.1 on its caller's
// goroutine (see the package's doc). Its zero value is usable: it dials
// with a net.Dialer, verifies TLS against the system's roots and keeps
// DefaultMaxIdle connections per host. It is safe for concurrent use; set
// its fields before the first request and leave them.
type Transport struct {
	// MaxIdle is how many idle connections are kept per scheme and host:
	// 0 is DefaultMaxIdle, below 0 none.
	MaxIdle int
	// IdleTimeout is how long a connection may stay idle and still be
	// used again: 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps an answer's status line and header: 0 is
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int64
	// TLS configures https connections; nil is tls.Config's defaults.
	// Without a ServerName the request's host is verified; NextProtos is
	// always "http/1.1".
	TLS *tls.Config
	// Dial opens a connection; nil is a net.Dialer's DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now is the clock idle connections are timed by; nil is time.Now.
	Now func() time.Time

	// mu guards idle.
	mu sync.Mutex
	// idle is each host's idle connections, the longest idle first.
	idle map[string][]*conn
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip implements http.RoundTripper: it sends req on a kept or new
// connection and returns the answer once its header is read; the body is
// read from the connection as the caller reads it.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	dst, err := target(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	for retried := false; ; retried = true {
		c, err := t.conn(ctx, dst, retried)
		if err != nil {
			closeBody(req)
			return nil, t.fail(ctx, req, "dialing", err)
		}
		resp, err := c.roundTrip(ctx, req)
		if err == nil {
			return resp, nil
		}
		if retried || !c.reused || c.got != 0 || ctx.Err() != nil || errors.Is(err, errRequest) || !rewindable(req) {
			return nil, t.fail(ctx, req, "", err)
		}
		// The kept connection was gone before the server answered: send
		// the request again, once, on a new one.
		if req, err = rewind(req); err != nil {
			return nil, t.fail(ctx, req, "", err)
		}
	}
}

// fail is err as RoundTrip returns it: naming the request, and wrapping
// the context's error and cause when the context ended it.
func (t *Transport) fail(ctx context.Context, req *http.Request, doing string, err error) error {
	what := req.Method + " " + req.URL.Scheme + "://" + req.URL.Host
	if doing != "" {
		what += ": " + doing
	}
	if ctx.Err() == nil {
		return fmt.Errorf("h1: %s: %w", what, err)
	}
	if cause := context.Cause(ctx); cause != ctx.Err() {
		return fmt.Errorf("h1: %s: %w (%w)", what, ctx.Err(), cause)
	}
	return fmt.Errorf("h1: %s: %w", what, ctx.Err())
}

// errRequest marks a request that cannot be written as it is; sending it
// again would fail the same way.
var errRequest = errors.New("h1: request")

// dest is where a request goes.
type dest struct {
	key    string // scheme://host:port, the idle pool's key
	addr   string // host:port
	tls    bool
	server string // the host name a TLS certificate is checked against
}

// target is where req goes.
func target(req *http.Request) (dest, error) {
	u := req.URL
	if u == nil {
		return dest{}, fmt.Errorf("%w: no URL", errRequest)
	}
	port := u.Port()
	var d dest
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		d.tls = true
	default:
		return dest{}, fmt.Errorf("%w: scheme %q in %s: want http or https", errRequest, u.Scheme, u.Redacted())
	}
	host := u.Hostname()
	if host == "" {
		return dest{}, fmt.Errorf("%w: no host in %s", errRequest, u.Redacted())
	}
	d.addr = net.JoinHostPort(host, port)
	d.key = u.Scheme + "://" + d.addr
	d.server = host
	return d, nil
}

// rewindable says whether req's body can be sent again.
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind is req with its body made again.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return req, fmt.Errorf("%w: making the body again: %w", errRequest, err)
	}
	again := *req
	again.Body = body
	return &again, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// conn is a kept or new connection to dst, from the idle pool (unless
// fresh) or dialed.
func (t *Transport) conn(ctx context.Context, dst dest, fresh bool) (*conn, error) {
	if !fresh {
		if c := t.takeIdle(dst.key); c != nil {
			return c, nil
		}
	}
	return t.dial(ctx, dst)
}

// takeIdle takes the most recently used idle connection to key that is
// still open, closing those found expired or closed on the way.
func (t *Transport) takeIdle(key string) *conn {
	timeout := t.IdleTimeout
	if timeout <= 0 {
		timeout = DefaultIdleTimeout
	}
	for {
		t.mu.Lock()
		cs := t.idle[key]
		if len(cs) == 0 {
			t.mu.Unlock()
			return nil
		}
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		t.idle[key] = cs[:len(cs)-1]
		var stale []*conn
		if t.now().Sub(c.idleSince) > timeout {
			// The others were idle longer still.
			stale = append(cs[:len(cs)-1:len(cs)-1], c)
			delete(t.idle, key)
		}
		t.mu.Unlock()
		if stale != nil {
			for _, s := range stale {
				s.close()
			}
			return nil
		}
		if c.open() {
			c.reused = true
			return c
		}
		c.close()
	}
}

// putIdle keeps c for its next request, closing the longest idle of its
// host's when there are MaxIdle already.
func (t *Transport) putIdle(c *conn) {
	max := t.MaxIdle
	if max == 0 {
		max = DefaultMaxIdle
	}
	if max < 0 {
		c.close()
		return
	}
	c.idleSince = t.now()
	var drop *conn
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	cs := t.idle[c.key]
	if len(cs) >= max {
		drop = cs[0]
		copy(cs, cs[1:])
		cs = cs[:len(cs)-1]
	}
	t.idle[c.key] = append(cs, c)
	t.mu.Unlock()
	if drop != nil {
		drop.close()
	}
}

func (t *Transport) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// CloseIdleConnections closes every idle connection;
// http.Client.CloseIdleConnections calls it.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.close()
		}
	}
}

// idleCount is how many connections to key are idle.
func (t *Transport) idleCount(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle[key])
}

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
			c.peekFn, c.waitFn = c.peek, c.waitAnswer
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

	// For open, answer and abort, made once per connection.
	peekFn   func(fd uintptr) bool
	waitFn   func(fd uintptr) bool
	woken    bool // waitFn was called once: the next call is after the socket became readable
	peekByte [1]byte
	peekN    uintptr
	peekErr  syscall.Errno
	abortFn  func()
}

// Read reads the connection for its buffered reader, counting what came
// and refusing past the header's limit.
func (c *conn) Read(p []byte) (int, error) {
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

// readers and writers are the buffers requests are written through and
// answers read through: a connection holds a reader only while in use.
var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
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
	if c.br == nil {
		c.answer()
		c.br = readers.Get().(*bufio.Reader)
		c.br.Reset(c)
	}
	max := c.t.MaxHeaderBytes
	if max <= 0 {
		max = DefaultMaxHeaderBytes
	}
	c.left = max
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

// write writes req on c.
func (c *conn) write(req *http.Request) error {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(c.nc)
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
	}()
	var err error
	if plain(req) {
		err = writeRequest(bw, c.nc, req)
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
// straight to w, bw's writer, once the header is flushed: a model request
// of tens or hundreds of kilobytes is written in one call, not copied
// through the buffer a buffer's length at a time.
func writeRequest(bw *bufio.Writer, w io.Writer, req *http.Request) error {
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
		var n [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(n[:0], req.ContentLength, 10))
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
	if req.ContentLength == 0 {
		return nil
	}
	if req.Body == nil {
		return fmt.Errorf("%w: ContentLength %d without a body", errRequest, req.ContentLength)
	}
	dst := io.Writer(bw)
	if req.ContentLength > int64(bw.Available()) {
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing the request: %w", err)
		}
		dst = w
	}
	n, err := io.Copy(dst, req.Body)
	if err != nil {
		return fmt.Errorf("writing the request's body: %w", err)
	}
	if n != req.ContentLength {
		return fmt.Errorf("%w: ContentLength %d with a body of %d bytes", errRequest, req.ContentLength, n)
	}
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

// answer waits for the first byte of the answer to a request written on
// c before a read buffer is taken for it: a model may think for seconds,
// and a turn waiting for it then holds no buffer. An error (the request's
// context closed the connection) is the read's to meet.
func (c *conn) answer() {
	if c.sys == nil {
		return
	}
	c.woken = false
	c.sys.Read(c.waitFn)
}

// waitAnswer is answer's look at the socket: one non-blocking peek, and
// once nothing has come, a wait for the socket to be readable.
func (c *conn) waitAnswer(fd uintptr) bool {
	if c.woken {
		return true
	}
	c.woken = true
	c.peek(fd)
	return c.peekErr != syscall.EAGAIN && c.peekErr != syscall.EWOULDBLOCK
}

// abort closes the TCP connection under whatever reads or writes it, for
// a request whose context is done.
func (c *conn) abort() { c.raw.Close() }

// close closes c for good.
func (c *conn) close() {
	c.nc.Close()
	c.br = nil
}

// body is an answer's body read from its connection: its end gives the
// connection back to the pool, closing it before its end closes the
// connection. Read and Close may be called from different goroutines.
type body struct {
	rc   io.ReadCloser // http.ReadResponse's body over c's reader
	ctx  context.Context
	stop func() bool // stops the context's abort
	keep bool        // neither side said Connection: close

	// mu guards c and closed.
	mu     sync.Mutex
	c      *conn // nil once the body has ended
	closed bool
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	c, closed := b.c, b.closed
	b.mu.Unlock()
	if closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if c == nil {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == io.EOF:
	case b.ctx.Err() != nil:
		err = fmt.Errorf("h1: reading the response: %w", b.ctx.Err())
		if cause := context.Cause(b.ctx); cause != b.ctx.Err() {
			err = fmt.Errorf("h1: reading the response: %w (%w)", b.ctx.Err(), cause)
		}
	default:
		err = fmt.Errorf("h1: reading the response: %w", err)
	}
	if b.c != nil {
		b.end(err == io.EOF)
	}
	return n, err
}

// Close ends the body; before its end it closes the connection.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.c != nil {
		b.end(false)
	}
	return nil
}

// end lets go of the connection: back to the pool when the answer was
// read whole (done), nothing says close, nothing more was sent and the
// context has not closed it; closed otherwise.
func (b *body) end(done bool) {
	c := b.c
	b.c = nil
	if !b.stop() || !done || !b.keep || c.br.Buffered() != 0 {
		c.close()
		return
	}
	c.br.Reset(nil)
	readers.Put(c.br)
	c.br = nil
	c.reused = false
	c.t.putIdle(c)
}
