package epoll

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// Set is an epoll set and its goroutine, which lives as long as the
// process. It is safe for concurrent use.
type Set struct {
	fd int

	mu sync.Mutex
	// guarded by mu
	told map[uint64]Told // by id, until Forget
	next uint64
}

// Told is what is told a descriptor's events: Event is called with the id
// it was added under, on the set's goroutine, and must not block (it notes
// what came, or starts a goroutine for more). What is added is kept by the
// set until Forget, so its teller needs no account of its own by id.
type Told interface{ Event(id uint64) }

// Func is a function as a Told.
type Func func(id uint64)

// Event calls f.
func (f Func) Event(id uint64) { f(id) }

// New makes a set and starts its goroutine.
func New() (*Set, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	s := &Set{fd: fd, told: map[uint64]Told{}}
	go s.loop()
	return s, nil
}

// Add adds descriptor fd for events (unix.EPOLLIN, EPOLLRDHUP, EPOLLET,
// EPOLLONESHOT…); t is told each event with its id until Forget.
func (s *Set) Add(fd int, events uint32, t Told) (uint64, error) {
	s.mu.Lock()
	s.next++
	id := s.next
	s.told[id] = t
	s.mu.Unlock()
	ev := unix.EpollEvent{Events: events, Fd: int32(id), Pad: int32(id >> 32)}
	if err := unix.EpollCtl(s.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		s.Forget(id)
		return 0, err
	}
	return id, nil
}

// Rearm sets the events of fd, added as id, again: a one-shot descriptor
// whose event came is armed by one call, and events 0 has the set tell
// nothing of fd but its hang-ups and errors, which epoll always tells. It
// fails with unix.ENOENT once fd is out of the set (it was closed).
func (s *Set) Rearm(fd int, id uint64, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(id), Pad: int32(id >> 32)}
	return unix.EpollCtl(s.fd, unix.EPOLL_CTL_MOD, fd, &ev)
}

// Delete takes fd, added as id, out of the set, and forgets id: for a
// descriptor that stays open. One about to close needs only Forget.
func (s *Set) Delete(fd int, id uint64) {
	s.Forget(id)
	unix.EpollCtl(s.fd, unix.EPOLL_CTL_DEL, fd, nil)
}

// Forget stops telling id's events; closing its descriptor then takes it
// out of the set.
func (s *Set) Forget(id uint64) {
	s.mu.Lock()
	delete(s.told, id)
	s.mu.Unlock()
}

func (s *Set) loop() {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(s.fd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			s.mu.Lock()
			t := s.told[id]
			s.mu.Unlock()
			if t != nil {
				t.Event(id)
			}
		}
	}
}
