package fleet

import (
	"errors"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/internal/epoll"
)

// waiter watches the agents' listeners, all of them through the process's
// one epoll set (harness/internal/epoll), so no agent, awake or asleep,
// holds a goroutine of its own waiting for a connection: the first
// connection to come to one calls its wake function, once. It is safe for
// concurrent use.
type waiter struct {
	set  *epoll.Set
	fire epoll.Func // w.woken, made once

	mu sync.Mutex
	// guarded by mu
	ids   map[int32]uint64  // the listeners in the set, armed or fired, by descriptor
	wakes map[uint64]func() // by id in the set, while armed
}

// newWaiter watches listeners through set.
func newWaiter(set *epoll.Set) *waiter {
	w := &waiter{set: set, ids: map[int32]uint64{}, wakes: map[uint64]func(){}}
	w.fire = w.woken
	return w
}

// fd is ln's descriptor.
func fd(ln *net.TCPListener) (int32, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int32
	if err := rc.Control(func(s uintptr) { n = int32(s) }); err != nil {
		return 0, err
	}
	return n, nil
}

// watch calls wake, on a goroutine of its own, once ln has a connection
// waiting; until then ln has no goroutine of its own.
func (w *waiter) watch(ln *net.TCPListener, wake func()) error {
	n, err := fd(ln)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// A listener watched before stays in the set, disabled once its one
	// event fired: armed again by one call, not taken out and put in.
	const events = unix.EPOLLIN | unix.EPOLLONESHOT
	if id, ok := w.ids[n]; ok {
		w.wakes[id] = wake
		err := w.set.Rearm(int(n), id, events)
		if err == nil {
			return nil
		}
		// A descriptor closed and numbered again is out of the set: added
		// anew below.
		delete(w.wakes, id)
		delete(w.ids, n)
		w.set.Forget(id)
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	// Held while it is added: its event, should it come at once, finds
	// its wake.
	id, err := w.set.Add(int(n), events, w.fire)
	if err != nil {
		return err
	}
	w.ids[n] = id
	w.wakes[id] = wake
	return nil
}

// forget stops watching ln, before it is closed.
func (w *waiter) forget(ln *net.TCPListener) {
	n, err := fd(ln)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := w.ids[n]; ok {
		delete(w.ids, n)
		delete(w.wakes, id)
		w.set.Delete(int(n), id)
	}
}

// woken is the set's call for the listener added as id: its one event
// fired, and it stays in the set, disabled, until watched again.
func (w *waiter) woken(id uint64) {
	w.mu.Lock()
	wake := w.wakes[id]
	delete(w.wakes, id)
	w.mu.Unlock()
	if wake != nil {
		go wake()
	}
}
