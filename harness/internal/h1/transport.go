package h1

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
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
