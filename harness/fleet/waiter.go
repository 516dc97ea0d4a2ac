package fleet

import (
	"errors"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// waiter watches the agents' listeners, all of them in one goroutine of
// the process, so no agent, awake or asleep, holds a goroutine of its own
// waiting for a connection: the first connection to come to one calls its
// wake function, once. It is safe for concurrent use.
type waiter struct {
	epfd int

	mu sync.Mutex
	// guarded by mu
	wakes map[int32]func() // by the listener's descriptor, while it is armed
	armed map[int32]bool   // the listeners in the epoll set, armed or fired
}

// newWaiter starts the process's waiter.
func newWaiter() (*waiter, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &waiter{epfd: fd, wakes: map[int32]func(){}, armed: map[int32]bool{}}
	go w.loop()
	return w, nil
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
	w.wakes[n] = wake
	// A listener watched before stays in the epoll set, disabled once its
	// one event fired: armed again by one call, not taken out and put in.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: n}
	op := unix.EPOLL_CTL_ADD
	if w.armed[n] {
		op = unix.EPOLL_CTL_MOD
	}
	err = unix.EpollCtl(w.epfd, op, int(n), &ev)
	if err == unix.ENOENT { // a descriptor closed and numbered again: out of the set
		err = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(n), &ev)
	}
	if err != nil {
		delete(w.wakes, n)
		delete(w.armed, n)
		return err
	}
	w.armed[n] = true
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
	delete(w.wakes, n)
	if w.armed[n] {
		delete(w.armed, n)
		unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(n), nil)
	}
}

func (w *waiter) loop() {
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
			w.mu.Lock()
			wake := w.wakes[ev.Fd]
			delete(w.wakes, ev.Fd) // its one event fired: it stays in the set, disabled
			w.mu.Unlock()
			if wake != nil {
				go wake()
			}
		}
	}
}
