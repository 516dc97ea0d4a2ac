package httpconn

import (
	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/internal/epoll"
)

// Watcher sees the far end of the connections served close, through the
// process's one epoll set (harness/internal/epoll): a request waiting on
// its handler holds no goroutine of its own to see its caller leave, as
// net/http's background read does. Each connection is added once, for its
// life, edge-triggered and for the close alone (EPOLLRDHUP, with the
// hang-ups and errors epoll always tells), so a request's bytes wake no
// one; the set keeps it until it is removed. Between requests a
// connection's own wait sees its caller leave, so one that answered its
// first request rests, told nothing, until its second comes (see
// conn.resting). It is safe for concurrent use.
type Watcher struct{ set *epoll.Set }

// watched are the events a connection is watched for.
const watched = unix.EPOLLRDHUP | unix.EPOLLET

// NewWatcher watches connections through set.
func NewWatcher(set *epoll.Set) *Watcher { return &Watcher{set: set} }

// add watches c until remove: c.Event is called once its far end closes.
func (w *Watcher) add(c *conn) {
	var id uint64
	var err error
	cerr := c.sys.Control(func(fd uintptr) {
		id, err = w.set.Add(int(fd), watched, c)
	})
	if err == nil && cerr == nil {
		c.id = id
	}
}

// remove stops watching c, before it is closed (closing its descriptor
// takes it out of the set).
func (w *Watcher) remove(c *conn) { w.set.Forget(c.id) }

// rest stops telling c's far end closing, but for the hang-ups and errors
// epoll always tells; wake tells it again, at once if it closed meanwhile
// (epoll looks at a descriptor as its events are set). Each sets them
// while the descriptor is c's (Control): one another goroutine closed,
// its number maybe another connection's now, is not touched.
func (w *Watcher) rest(c *conn) { w.events(c, 0) }
func (w *Watcher) wake(c *conn) { w.events(c, watched) }

func (w *Watcher) events(c *conn, events uint32) {
	c.sys.Control(func(fd uintptr) { w.set.Rearm(int(fd), c.id, events) })
}
