package fleet

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// errPaused ends a watched listener's Accept once it took the connection
// the waiter woke it for, so the Serve returns and no goroutine of the
// agent waits on it.
var errPaused = errors.New("the listener waits on the waiter")

// errNoRoom ends a listener's Accept when the process has no room for
// another connection: the connection waits in the listener's queue, and
// the listener is served again once a connection closes (see wait).
var errNoRoom = errors.New("the listener waits for room")

// errNoDescriptor ends a listener's Accept when the process met its
// descriptor limit past what the pool counts: the listener is served again
// after noRoomRetry, never at once.
var errNoDescriptor = errors.New("the listener waits for a descriptor")

// listen listens on addr for an agent's callers. Its connections carry no
// TCP keep-alive probes, four system calls a connection to set: a caller
// that leaves is seen as it closes (EPOLLRDHUP), a connection idle between
// requests is closed after the server's idle time, and a turn runs to its
// end whoever waits for it (see CHOICES.md).
func listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(context.Background(), "tcp", addr)
}

// pausable is an agent's listener. Watched (the process has a waiter), it
// has no accept loop of its own, awake or asleep: the waiter wakes it when
// a connection comes, Serve takes that one connection and returns, and the
// waiter watches it again. Close, as Serve calls it on return, leaves a
// watched listener open; leave closes it. Each connection takes its room
// in the process's pool before it is accepted.
type pausable struct {
	*net.TCPListener
	r       *running    // whose it is
	watched bool        // set before its first Serve, never changed
	took    atomic.Bool // this Serve took its one connection
	waiting atomic.Bool // this Serve ended for want of room: Close leaves the listener open
}

func (p *pausable) Accept() (net.Conn, error) {
	if p.watched && p.took.Swap(true) {
		return nil, errPaused
	}
	pool := p.r.f.pool
	if !pool.Take(1) {
		p.waiting.Store(true)
		return nil, errNoRoom
	}
	c, err := p.TCPListener.Accept()
	if err != nil {
		pool.Put(1)
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			// Past what the pool counts: a descriptor the budget does not
			// know of. Logged, and tried again once room comes or in a
			// while, never at once.
			p.r.f.Log.Error("connection not accepted: no descriptor left", "agent", p.r.name, "error", err)
			p.waiting.Store(true)
			return nil, errNoDescriptor
		}
	}
	return c, err
}

func (p *pausable) Close() error {
	if p.watched || p.waiting.Load() {
		return nil
	}
	return p.TCPListener.Close()
}

// serve accepts the agent's connection the waiter saw coming, or, with no
// waiter, its connections until it stops. The one connection of a watched
// listener is answered on this goroutine, once the listener is watched
// again: a goroutine made for it would begin with a small stack and grow
// it, copied, as the request is read and the turn runs.
func (r *running) serve() {
	nc, err := r.f.conns.serve(r)
	switch {
	case r.leaving.Load(): // its listener closed
	case errors.Is(err, errNoRoom):
		r.wait(true)
	case errors.Is(err, errNoDescriptor):
		r.wait(false)
	case errors.Is(err, errPaused):
		r.watchAgain()
	default:
		select {
		case r.f.errc <- err:
		default: // the process is stopping for an earlier one
		}
	}
	if nc != nil {
		r.f.conns.answer(r, nc)
	}
}

// watchAgain has the waiter watch the listener again, once it took its one
// connection; past a failure, an accept loop takes its connections.
func (r *running) watchAgain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaving.Load() {
		return
	}
	if err := r.f.waiter.watch(r.ln.TCPListener, r.resume); err != nil {
		r.f.Log.Warn("agent's listener not watched, accepting on", "agent", r.name, "error", err)
		r.ln.watched = false
		go r.serve()
	}
}

// wait serves the listener again once the pool has room for a connection
// (one closes: the pool is full of connections, as its caches gave back
// what they kept), or, for a descriptor the pool does not count, after
// noRoomRetry: its connection waits in the listener's queue meanwhile,
// and no goroutine of the agent waits with it.
func (r *running) wait(room bool) {
	if room {
		r.f.pool.Wait(r.resume)
		return
	}
	time.AfterFunc(noRoomRetry, r.resume)
}

// noRoomRetry is the longest a listener waits for room before it is tried
// again: a descriptor not counted by the pool may have come free.
const noRoomRetry = 100 * time.Millisecond

// listen starts taking the agent's connections: the waiter watches its
// listener, or, with no waiter, an accept loop runs.
func (r *running) listen() {
	if r.ln.watched {
		r.mu.Lock()
		err := r.f.waiter.watch(r.ln.TCPListener, r.resume)
		if err == nil {
			r.mu.Unlock()
			return
		}
		r.f.Log.Warn("agent's listener not watched, accepting on", "agent", r.name, "error", err)
		r.ln.watched = false
		r.mu.Unlock()
	}
	go r.serve()
}

// resume accepts the connection that came to the agent's watched
// listener.
func (r *running) resume() {
	if r.leaving.Load() {
		return
	}
	r.ln.took.Store(false)
	r.ln.waiting.Store(false)
	r.serve()
}
