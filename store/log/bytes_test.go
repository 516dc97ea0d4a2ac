package log

import (
	"bytes"
	"testing"
)

func TestLastNewline(t *testing.T) {
	for n := range 40 {
		b := bytes.Repeat([]byte{'x'}, n)
		if got := lastNewline(b); got != -1 {
			t.Fatalf("no newline in %d bytes: got %d", n, got)
		}
		for i := range n {
			for j := i; j < n; j++ {
				c := bytes.Clone(b)
				c[i], c[j] = '\n', '\n'
				c = append(c[:0:0], c...)
				if got, want := lastNewline(c), bytes.LastIndexByte(c, '\n'); got != want {
					t.Fatalf("newlines at %d and %d of %d: got %d, want %d", i, j, n, got, want)
				}
			}
		}
	}
	// Bytes that differ from '\n' by one bit, or sit beside it, are not it.
	b := []byte{'\n' ^ 1, '\n' ^ 0x80, 0x0b, 0x09, 0x8a, 0, 0xff, 0x0a ^ 0x10, 'a'}
	for range 3 {
		b = append(b, b...)
	}
	if got := lastNewline(b); got != -1 {
		t.Fatalf("found a newline at %d among near misses", got)
	}
}

func FuzzLastNewline(f *testing.F) {
	f.Add([]byte("a\nbcdefghij\nklm"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := lastNewline(b), bytes.LastIndexByte(b, '\n'); got != want {
			t.Fatalf("got %d, want %d", got, want)
		}
	})
}
