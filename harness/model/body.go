package model

import (
	"io"
	"sync"
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

// sent is a request's body being sent. Its bytes go back for another
// request as soon as the transport closed every reader of them, which it
// does once it wrote them: a turn waiting for its model's answer, which
// may take minutes, holds no copy of its request. A transport that sends
// the request again (a kept connection found closed before any answer)
// asks for another reader, and the bytes are made again, the same.
type sent struct {
	mu    sync.Mutex
	b     []byte                           // nil once gone back
	size  int                              // len(b)
	again func(dst []byte) ([]byte, error) // makes b again, appended to dst
	open  int                              // readers not closed
}

// reader is one more reader of s's bytes, made again if they went back.
func (s *sent) reader() (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		b, err := s.again(newBody(s.size))
		if err != nil {
			return nil, err
		}
		s.b = b
	}
	s.open++
	return &sentReader{b: s.b, s: s}, nil
}

// release gives s's bytes back for another request once no reader of them
// is open. A transport may close a body after RoundTrip returned (net/http
// says so): the last reader's Close then gives them back.
func (s *sent) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *sent) releaseLocked() {
	if s.open == 0 && s.b != nil {
		b := s.b[:0]
		s.b = nil
		bodies.Put(&b)
	}
}

// sentReader is one reader of a sent's bytes. A transport may close it
// from another goroutine while it reads (net/http may): the sent's lock,
// held through a read, makes the close wait for it, and once closed the
// reader holds the bytes no longer, so they go back with no reader left.
type sentReader struct {
	b      []byte // nil once closed
	off    int
	closed bool
	s      *sent
}

func (r *sentReader) Read(p []byte) (int, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// WriteTo writes what is left to w in one write: a transport copying the
// body (io.Copy) hands a long one to the connection whole.
func (r *sentReader) WriteTo(w io.Writer) (int64, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.off >= len(r.b) {
		return 0, nil
	}
	n, err := w.Write(r.b[r.off:])
	r.off += n
	return int64(n), err
}

// Close gives the bytes back once every reader of them is closed; each
// reader counts once.
func (r *sentReader) Close() error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if !r.closed {
		r.closed, r.b = true, nil
		r.s.open--
		r.s.releaseLocked()
	}
	return nil
}
