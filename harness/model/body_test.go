package model

import (
	"io"
	"testing"
)

// A body's bytes go back for another call once every reader the
// transport was given is closed, each counted once, and are made again,
// the same, for a reader asked after that: the request sent again.
func TestBodyReleased(t *testing.T) {
	made := 0
	again := func(dst []byte) ([]byte, error) { made++; return append(dst, "the body"...), nil }
	b, _ := again(make([]byte, 0, 64))
	s := &sent{b: b, size: len(b), again: again}
	read := func() io.ReadCloser {
		t.Helper()
		r, err := s.reader()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := read(), read() // sent, then sent again on a new connection
	r1.Close()
	r1.Close()
	if s.b == nil {
		t.Fatal("released while a reader is open")
	}
	r2.Close()
	if s.b != nil {
		t.Fatal("not released once every reader closed")
	}
	s.release()  // once only
	r3 := read() // sent again, after the bytes went back
	got, _ := io.ReadAll(r3)
	if string(got) != "the body" || made != 2 {
		t.Fatalf("the body made again %d times: %q", made-1, got)
	}
	r3.Close()
	if s.b != nil {
		t.Fatal("not released once its reader closed")
	}
}

// TestBodyGrows: a conversation's next request is a little larger than
// its last, and is made in the last's bytes.
func TestBodyGrows(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops a pool's puts at random")
	}
	first := newBody(20_000)
	s := &sent{b: append(first, "x"...), size: 1}
	s.release()
	next := newBody(20_000 + 600) // a message and its answer more
	if cap(next) != cap(first) || &next[:1][0] != &first[:1][0] {
		t.Fatalf("a body of %d bytes was made anew after one with room for %d", 20_600, cap(first))
	}
}

// A transport may close a body on one goroutine while it reads it on
// another: the read sees the bytes whole or not at all, and they go back
// once both are done.
func TestBodyClosedWhileRead(t *testing.T) {
	b := make([]byte, 1<<16)
	s := &sent{b: b, size: len(b), again: func(dst []byte) ([]byte, error) { return append(dst, b...), nil }}
	r, err := s.reader()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan int)
	go func() {
		n, p := 0, make([]byte, 7)
		for {
			k, err := r.Read(p)
			n += k
			if err != nil {
				read <- n
				return
			}
		}
	}()
	r.Close()
	if n := <-read; n > len(b) {
		t.Errorf("read %d bytes of %d", n, len(b))
	}
	if s.b != nil {
		t.Error("not released once its reader closed")
	}
}
