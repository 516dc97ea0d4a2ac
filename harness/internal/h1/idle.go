package h1

import (
	"context"
	"time"

	"lnk.dev/linkharness/harness/internal/apart"
)

// conn is a kept or new connection to dst, from the idle pool (unless
// fresh) or dialed.
func (t *Transport) conn(ctx context.Context, dst dest, fresh bool) (*conn, error) {
	if !fresh {
		if c := t.takeIdle(dst.key); c != nil {
			return c, nil
		}
	}
	// Dialed on a goroutine of its own: net's dial and a TLS handshake go
	// some KiB deep, past what the stack of a turn waiting on its answer
	// holds (see package apart).
	return apart.Do(func() (*conn, error) { return t.dial(ctx, dst) })
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
