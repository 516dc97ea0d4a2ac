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
