package fleet

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/internal/httpconn"
	"lnk.dev/linkharness/harness/server"
)

// conns is the process's one HTTP server of every agent's connections and
// the account of them by agent: an agent has no server, map or goroutine
// of its own for its connections, and one that has none holds nothing for
// them. The server is Link Harness's own (harness/internal/httpconn): a
// message waiting on its turn holds no buffer of its connection and no
// goroutine besides its turn's. An agent's connections are closed once
// idle while it sleeps or leaves; a leaving agent waits for the rest. It
// is safe for concurrent use.
type conns struct {
	hs   *httpconn.Server
	pool *budget.Pool // counts each connection, from before it is accepted to its close

	mu sync.Mutex
	// guarded by mu
	open map[net.Conn]*connOf
	peak int      // the most open since open was made
	idle idleList // the idle ones, the longest idle first
}

// connOf is one connection: the agent it came to, and where it is.
type connOf struct {
	nc     net.Conn
	r      *running
	state  http.ConnState
	since  time.Time // when it was accepted
	closed bool      // closed by GiveBack, which gave its room back to the pool

	prev, next *connOf // in the idle list, while idle
}

// idleList is the idle connections, in the order they went idle.
type idleList struct{ head, tail *connOf }

func (l *idleList) push(o *connOf) {
	o.prev, o.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = o
	} else {
		l.head = o
	}
	l.tail = o
}

func (l *idleList) remove(o *connOf) {
	if o.prev != nil {
		o.prev.next = o.next
	} else if l.head == o {
		l.head = o.next
	}
	if o.next != nil {
		o.next.prev = o.prev
	} else if l.tail == o {
		l.tail = o.prev
	}
	o.prev, o.next = nil, nil
}

// agentKey is the context key of the agent a connection came to.
type agentKey struct{}

// newConns makes the process's server, its connections counted in pool;
// serve(r) serves r's listener.
func newConns(pool *budget.Pool, watch *httpconn.Watcher, log *slog.Logger) *conns {
	c := &conns{open: map[net.Conn]*connOf{}, pool: pool}
	c.hs = &httpconn.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			req.Context().Value(agentKey{}).(*running).ServeHTTP(w, req)
		}),
		Log:               log,
		Watch:             watch,
		State:             c.state,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    server.MaxHeaderBytes,
	}
	return c
}

// serve accepts r's connections until its listener's Accept fails, and
// answers each on a goroutine of its own; it returns that error, the
// listener closed as its Close says. A watched listener's one connection
// is returned with errPaused, not answered: the caller answers it.
func (c *conns) serve(r *running) (net.Conn, error) {
	defer r.ln.Close()
	for {
		nc, err := r.ln.Accept()
		if err != nil {
			return nil, err
		}
		c.add(r, nc)
		if r.ln.watched {
			return nc, errPaused
		}
		go c.answer(r, nc)
	}
}

// answer answers the requests of r's connection nc until it closes.
func (c *conns) answer(r *running, nc net.Conn) {
	c.hs.ServeConn(context.WithValue(context.Background(), agentKey{}, r), nc)
}

// add counts in a connection accepted for r. A connection that comes to an
// agent leaving is closed at once.
func (c *conns) add(r *running, nc net.Conn) {
	c.mu.Lock()
	c.open[nc] = &connOf{nc: nc, r: r, state: http.StateNew, since: time.Now()}
	c.peak = max(c.peak, len(c.open))
	r.conns++
	c.mu.Unlock()
	if r.leaving.Load() {
		nc.Close()
	}
}

// state follows a connection: closed, it is counted out (the agent's last
// one ends its leaving's wait); idle, it is closed if its agent sleeps or
// leaves.
func (c *conns) state(nc net.Conn, s http.ConnState) {
	c.mu.Lock()
	o, ok := c.open[nc]
	if !ok {
		c.mu.Unlock()
		return
	}
	if o.state == http.StateIdle {
		c.idle.remove(o)
	}
	switch s {
	case http.StateClosed:
		delete(c.open, nc)
		if !o.closed {
			c.pool.Put(1)
		}
		if len(c.open) == 0 && c.peak > shrinkPast {
			// A map never gives back the room it grew to: made again
			// once empty, it holds nothing for the connections gone.
			c.open, c.peak = map[net.Conn]*connOf{}, 0
		}
		o.r.conns--
		if o.r.conns == 0 && o.r.drained != nil {
			close(o.r.drained)
			o.r.drained = nil
		}
		c.mu.Unlock()
		return
	}
	o.state = s
	if s == http.StateIdle && !o.closed {
		c.idle.push(o)
	}
	c.mu.Unlock()
	if s == http.StateIdle && (o.r.leaving.Load() || o.r.asleep()) {
		nc.Close()
	}
}

// shrinkPast is how many connections open at once make the account of
// them made again once none is open.
const shrinkPast = 64

// newIdle is how long a connection that has sent nothing yet is let be,
// when its agent sleeps or leaves, before it is closed as idle (as
// net/http's Shutdown does).
const newIdle = 5 * time.Second

// closeIdle closes r's idle connections, and those that have sent nothing
// for newIdle; every connection of r, with all.
func (c *conns) closeIdle(r *running, all bool) {
	var shut []net.Conn
	c.mu.Lock()
	for nc, o := range c.open {
		if o.r != r {
			continue
		}
		if all || o.state == http.StateIdle || o.state == http.StateNew && time.Since(o.since) > newIdle {
			shut = append(shut, nc)
		}
	}
	c.mu.Unlock()
	for _, nc := range shut {
		nc.Close()
	}
}

// drained is closed once r has no connection; r leaves, so it takes no
// new one.
func (c *conns) drained(r *running) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if r.conns == 0 {
		close(ch)
		return ch
	}
	r.drained = ch
	return ch
}

// count is how many connections r has.
func (c *conns) count(r *running) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return r.conns
}

// GiveBack closes up to n idle connections, the longest idle first, and
// gives their room back to the pool at once: a kept-alive connection is a
// cache of the caller's, who dials again. It is budget.Giver.
func (c *conns) GiveBack(n int) int {
	var shut []net.Conn
	c.mu.Lock()
	for len(shut) < n && c.idle.head != nil {
		o := c.idle.head
		c.idle.remove(o)
		o.closed = true
		shut = append(shut, o.nc)
	}
	c.mu.Unlock()
	for _, nc := range shut {
		nc.Close()
		c.pool.Put(1)
	}
	return len(shut)
}
