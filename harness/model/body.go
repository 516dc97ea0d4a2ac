package model

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// bodies are requests' bodies, each used again once the transport has
// closed every reader of it: a request of tens of kilobytes made afresh at
// each call was the most a turn allocated.
var bodies sync.Pool // of *[]byte

// newBody is an empty body with room for n bytes, one used before if it
// has the room. A new one has a quarter more: a conversation's requests
// grow by a little each turn, and one made just big enough would fit no
// later request of it.
func newBody(n int) []byte {
	if p, _ := bodies.Get().(*[]byte); p != nil {
		if cap(*p) >= n {
			return (*p)[:0]
		}
		// Too small, it is left to the collector: put back, it would be
		// taken again before a larger one behind it.
	}
	return make([]byte, 0, bodyRoom(n))
}

// bodyRoom is the room a new body for n bytes is made with.
func bodyRoom(n int) int { return n + n/4 }

// sent is a request's body being sent: its readers, one per sending
// (the transport may send it again on a new connection), and how many are
// not closed yet.
type sent struct {
	b    []byte
	open atomic.Int32
}

// reader is one more reader of s's bytes.
func (s *sent) reader() io.ReadCloser {
	s.open.Add(1)
	return &sentReader{Reader: bytes.NewReader(s.b), s: s}
}

// release gives s's bytes back for another request once no reader of them
// is open: a transport may close a body after RoundTrip returned (net/http
// says so), and then they are left to the collector.
func (s *sent) release() {
	if s.open.Load() == 0 && s.b != nil {
		b := s.b[:0]
		s.b = nil
		bodies.Put(&b)
	}
}

type sentReader struct {
	*bytes.Reader
	s    *sent
	done atomic.Bool
}

func (r *sentReader) Close() error {
	if !r.done.Swap(true) {
		r.s.open.Add(-1)
	}
	return nil
}
