package epoll

import (
	"testing"

	"golang.org/x/sys/unix"
)

// pair is a connected pair of sockets, closed when the test ends unless
// closed before.
func pair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// wait is the next id told on ch; one never told is the test binary's
// timeout to report, with every goroutine's stack.
func wait(ch <-chan uint64) uint64 { return <-ch }

// A one-shot descriptor's event is told once with its id, again once it is
// armed again, and never after it is forgotten; each descriptor's to its
// own function.
func TestSetTells(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Skipf("no epoll: %v", err)
	}
	a, b := pair(t)
	c, d := pair(t)
	got := make(chan uint64, 8)
	other := make(chan uint64, 8)
	id, err := s.Add(a, unix.EPOLLIN|unix.EPOLLONESHOT, Func(func(id uint64) { got <- id }))
	if err != nil {
		t.Fatal(err)
	}
	id2, err := s.Add(c, unix.EPOLLRDHUP|unix.EPOLLET, Func(func(id uint64) { other <- id }))
	if err != nil {
		t.Fatal(err)
	}
	if id == id2 {
		t.Fatalf("two descriptors under one id %d", id)
	}
	unix.Write(b, []byte("x"))
	if g := wait(got); g != id {
		t.Fatalf("told id %d, want %d", g, id)
	}
	// Disabled once fired: armed again, the byte still there tells again.
	if err := s.Rearm(a, id, unix.EPOLLIN|unix.EPOLLONESHOT); err != nil {
		t.Fatal(err)
	}
	if g := wait(got); g != id {
		t.Fatalf("armed again, told id %d, want %d", g, id)
	}
	// The far end's close is told to the watcher of the close.
	unix.Close(d)
	if g := wait(other); g != id2 {
		t.Fatalf("told id %d, want %d", g, id2)
	}
	// Forgotten, a's events are told to no one; a third descriptor's
	// event, told after, shows the set went past them.
	s.Forget(id)
	s.Rearm(a, id, unix.EPOLLIN|unix.EPOLLONESHOT)
	e, f := pair(t)
	third := make(chan uint64, 1)
	if _, err := s.Add(e, unix.EPOLLIN, Func(func(id uint64) { third <- id })); err != nil {
		t.Fatal(err)
	}
	unix.Write(f, []byte("x"))
	wait(third)
	select {
	case g := <-got:
		t.Fatalf("forgotten id %d told", g)
	default:
	}
}

// Deleted, a descriptor is out of the set: armed again, it is refused
// ENOENT, as a descriptor closed and numbered again is.
func TestSetDelete(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Skipf("no epoll: %v", err)
	}
	a, _ := pair(t)
	id, err := s.Add(a, unix.EPOLLIN|unix.EPOLLONESHOT, Func(func(uint64) {}))
	if err != nil {
		t.Fatal(err)
	}
	s.Delete(a, id)
	if err := s.Rearm(a, id, unix.EPOLLIN|unix.EPOLLONESHOT); err != unix.ENOENT {
		t.Fatalf("armed after Delete: %v, want ENOENT", err)
	}
}

// Each event told makes the next descriptor ready, from the set's own
// goroutine, as it tells: every one is told, though each comes while the
// set is between its last wait and its park in the runtime's poller. And
// more ready at once than one wait takes (64) are all told.
func TestSetTellsWhatComesWhileTelling(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Skipf("no epoll: %v", err)
	}
	const n = 200
	far := make([]int, n)
	done := make(chan uint64, n)
	for i := range n {
		a, b := pair(t)
		far[i] = b
		next := i + 1
		if _, err := s.Add(a, unix.EPOLLIN|unix.EPOLLONESHOT, Func(func(id uint64) {
			if next < n {
				unix.Write(far[next], []byte("x"))
			}
			done <- id
		})); err != nil {
			t.Fatal(err)
		}
	}
	unix.Write(far[0], []byte("x"))
	for range n {
		wait(done)
	}
	// A burst: n ready before the set looks.
	burst := make(chan uint64, n)
	var ends []int
	for range n {
		a, b := pair(t)
		ends = append(ends, b)
		if _, err := s.Add(a, unix.EPOLLIN|unix.EPOLLONESHOT, Func(func(id uint64) { burst <- id })); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range ends {
		unix.Write(b, []byte("x"))
	}
	for range n {
		wait(burst)
	}
}
