package httpconn

import (
	"sync"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/internal/epoll"
)

// Watcher sees the far end of the connections served close, through the
// process's one epoll set (harness/internal/epoll): a request waiting on
// its handler holds no goroutine of its own to see its caller leave, as
// net/http's background read does. Each connection is added once, for its
// life, edge-triggered and for the close alone (EPOLLRDHUP, with the
// hang-ups and errors epoll always tells), so a request's bytes wake no
// one. It is safe for concurrent use.
type Watcher struct {
	set  *epoll.Set
	fire func(id uint64) // gone, made once

	mu sync.Mutex
	// guarded by mu
	conns map[uint64]*conn // by their id in the set
}

// NewWatcher watches connections through set.
func NewWatcher(set *epoll.Set) *Watcher {
	w := &Watcher{set: set, conns: map[uint64]*conn{}}
	w.fire = w.gone
	return w
}

// add watches c until remove: c.gone is called once its far end closes.
func (w *Watcher) add(c *conn) {
	// Held while c is added: its event, should it come at once, finds it.
	w.mu.Lock()
	defer w.mu.Unlock()
	var id uint64
	var err error
	cerr := c.sys.Control(func(fd uintptr) {
		id, err = w.set.Add(int(fd), unix.EPOLLRDHUP|unix.EPOLLET, w.fire)
	})
	if err != nil || cerr != nil {
		return
	}
	c.id = id
	w.conns[id] = c
}

// remove stops watching c, before it is closed (closing its descriptor
// takes it out of the set).
func (w *Watcher) remove(c *conn) {
	w.set.Forget(c.id)
	w.mu.Lock()
	delete(w.conns, c.id)
	w.mu.Unlock()
}

// gone tells the connection added as id that its far end closed.
func (w *Watcher) gone(id uint64) {
	w.mu.Lock()
	c := w.conns[id]
	w.mu.Unlock()
	if c != nil {
		c.gone()
	}
}
