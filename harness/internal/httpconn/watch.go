package httpconn

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// Watcher sees the far end of the connections served close, all of them
// in one epoll set and one goroutine of the process, made once by main or
// by the first ServeConn of a Server without one: a request waiting on
// its handler holds no goroutine of its own to see its caller leave, as
// net/http's background read does. Each connection is added once, for
// its life, and known by a number never used again, so an event that
// comes after its connection closed (its descriptor maybe numbered again)
// finds no one. It is safe for concurrent use.
type Watcher struct {
	epfd int

	mu sync.Mutex
	// guarded by mu
	conns map[uint64]*conn
	next  uint64
}

// NewWatcher starts a watcher, for as long as the process runs.
func NewWatcher() (*Watcher, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &Watcher{epfd: fd, conns: map[uint64]*conn{}}
	go w.loop()
	return w, nil
}

// add watches c until remove: gone is called once its far end closes.
// Edge-triggered and for the close alone (EPOLLRDHUP, with the hang-ups
// and errors epoll always tells), so a request's bytes wake no one.
func (w *Watcher) add(c *conn) {
	w.mu.Lock()
	w.next++
	id := w.next
	w.conns[id] = c
	w.mu.Unlock()
	var err error
	cerr := c.sys.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(id), Pad: int32(id >> 32)}
		err = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		w.mu.Lock()
		delete(w.conns, id)
		w.mu.Unlock()
		return
	}
	c.id = id
}

// remove stops watching c, before it is closed (closing its descriptor
// takes it out of the epoll set).
func (w *Watcher) remove(c *conn) {
	w.mu.Lock()
	delete(w.conns, c.id)
	w.mu.Unlock()
}

func (w *Watcher) loop() {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			w.mu.Lock()
			c := w.conns[id]
			w.mu.Unlock()
			if c != nil {
				c.gone()
			}
		}
	}
}
