package model

import "testing"

// A body's bytes go back for another call only once every reader the
// transport was given is closed, each counted once.
func TestBodyReleased(t *testing.T) {
	s := &sent{b: make([]byte, 0, 64)}
	r1, r2 := s.reader(), s.reader() // sent, then sent again on a new connection
	r1.Close()
	r1.Close()
	s.release()
	if s.b == nil {
		t.Fatal("released while a reader is open")
	}
	r2.Close()
	s.release()
	if s.b != nil {
		t.Fatal("not released once every reader closed")
	}
	s.release() // once only
}

// TestBodyGrows: a conversation's next request is a little larger than
// its last, and is made in the last's bytes.
func TestBodyGrows(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops a pool's puts at random")
	}
	first := newBody(20_000)
	s := &sent{b: append(first, "x"...)}
	s.release()
	next := newBody(20_000 + 600) // a message and its answer more
	if cap(next) != cap(first) || &next[:1][0] != &first[:1][0] {
		t.Fatalf("a body of %d bytes was made anew after one with room for %d", 20_600, cap(first))
	}
}
