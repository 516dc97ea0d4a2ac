package epoll

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Set is an epoll set and its goroutine, which lives as long as the
// process. It is safe for concurrent use.
type Set struct {
	fd   int
	file *os.File // fd, as the runtime's poller waits on it

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
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	s := &Set{fd: fd, file: os.NewFile(uintptr(fd), "epoll"), told: map[uint64]Told{}}
	rc, err := s.file.SyscallConn()
	if err != nil {
		s.file.Close()
		return nil, err
	}
	go s.loop(rc)
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

// loop tells the set's events as they come. An epoll set is itself
// readable while it holds events, so its goroutine waits in the runtime's
// poller, as a socket's reader does, not in an epoll_wait of its own that
// would hold a thread and have the scheduler take its processor back at
// each wait: it takes what is ready without waiting, tells it, and parks
// once a take found fewer than it had room for. All within one Read, so
// the poller's word of events that came while it told is kept, and the
// park ends at once (a new Read would clear it first). Should the poller
// refuse the set, its goroutine waits in epoll_wait.
func (s *Set) loop(rc syscall.RawConn) {
	events := make([]unix.EpollEvent, 64)
	failed := false
	err := rc.Read(func(fd uintptr) bool {
		for {
			n, err := s.take(events, 0)
			if err != nil {
				failed = true
				return true
			}
			if n < len(events) {
				return false
			}
		}
	})
	for err != nil && !failed {
		_, werr := s.take(events, -1)
		failed = werr != nil
	}
}

// take waits for the set's events up to ms milliseconds (-1: until one
// comes), at most len(events), and tells them; an interrupted wait is
// made again.
func (s *Set) take(events []unix.EpollEvent, ms int) (int, error) {
	n, err := unix.EpollWait(s.fd, events, ms)
	for errors.Is(err, unix.EINTR) {
		n, err = unix.EpollWait(s.fd, events, ms)
	}
	if err != nil {
		return 0, err
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
	return n, nil
}
