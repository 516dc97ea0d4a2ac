package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// Text is n bytes of printable text that differ by seq: the same bytes for
// the same arguments, so a test can make an event again to compare.
func Text(seq int64, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
	b := make([]byte, n)
	x := uint64(seq)*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = alphabet[x%uint64(len(alphabet))]
	}
	return string(b)
}

// Message is the message of seq with a Text of n bytes, the same bytes for
// the same arguments; seq 1 names thread, unless thread is "".
func Message(seq int64, n int, thread string) []byte {
	e := event.Event{
		Seq:  seq,
		Time: time.Unix(1767225600+seq, seq).UTC(),
		Type: event.TypeMessage,
		Text: Text(seq, n),
	}
	if seq == 1 {
		e.Thread = thread
	}
	return event.Append(nil, &e)
}

// Span lists the seqs from from to to, counting down when to is before
// from.
func Span(from, to int64) []int64 {
	var s []int64
	if from <= to {
		for i := from; i <= to; i++ {
			s = append(s, i)
		}
	} else {
		for i := from; i >= to; i-- {
			s = append(s, i)
		}
	}
	return s
}

// ReadAll reads c forward from seq 1, checking every event handed out is
// the one written at its seq (want, by seq - 1), in order, and returns how
// many were read and the read's error: what is whole before damage is read
// before the damage is reported.
func ReadAll(t testing.TB, c store.Conversation, want [][]byte) (int64, error) {
	t.Helper()
	n := int64(0)
	err := c.Read(context.Background(), 1, store.Forward, func(seq int64, ev []byte) bool {
		if seq != n+1 || seq > int64(len(want)) || !bytes.Equal(ev, want[seq-1]) {
			t.Fatalf("read seq %d after %d: %q, not an event written", seq, n, ev)
		}
		n = seq
		return true
	})
	return n, err
}

// ReadsWhole reads c forward from seq 1 and back from its last event, as a
// test reads what a store made of any bytes: each read ends cleanly or with
// store.ErrCorrupt, and hands out events of seqs without a gap, each
// holding its own seq, forward from 1; read whole both ways, the two agree.
// It returns how many events c holds, or -1 if a read found corruption,
// and the seq the read back started at (0 with none).
func ReadsWhole(t testing.TB, c store.Conversation) (n int, top int64) {
	t.Helper()
	ctx := context.Background()
	want := int64(1)
	ferr := c.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		if s, err := event.SeqOf(ev); err != nil || s != seq || seq != want {
			t.Fatalf("forward read handed out seq %d where %d was due, holding %.200q", seq, want, ev)
		}
		want++
		return true
	})
	next := int64(-1)
	berr := c.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		if next >= 0 && seq != next {
			t.Fatalf("reverse read handed out seq %d where %d was due", seq, next)
		}
		if next < 0 {
			top = seq
		}
		next = seq - 1
		return true
	})
	for _, err := range []error{ferr, berr} {
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("read: %v, not corruption", err)
		}
	}
	if ferr != nil || berr != nil {
		return -1, top
	}
	if n := want - 1; n != top || (n > 0 && next != 0) {
		t.Fatalf("forward read %d events; reverse read from %d stopped before %d", n, top, next)
	}
	return int(want - 1), top
}

// OpenThread returns the conversation thread of d, which it closes when t
// ends; err is the error opening d, and fails t, as an error opening the
// thread does. A test that opens a driver to use one conversation reads
// d, err := sqlite.Open(path); c := storetest.OpenThread(t, d, err, "t").
func OpenThread(t testing.TB, d store.Driver, err error, thread string) store.Conversation {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c, err := d.Open(thread)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// AppendThreads appends seqs 1 to n of each of threads to d (Event,
// variant 0) and returns the last thread's events, each followed by a
// '\n': what a database's own client prints of them, one a line.
func AppendThreads(t testing.TB, d store.Driver, n int64, threads ...string) []byte {
	t.Helper()
	var lines []byte
	for _, thread := range threads {
		c, err := d.Open(thread)
		if err != nil {
			t.Fatal(err)
		}
		lines = lines[:0]
		for seq := int64(1); seq <= n; seq++ {
			ev := Event(thread, seq, 0)
			if err := c.Append(context.Background(), seq, ev); err != nil {
				t.Fatal(err)
			}
			lines = append(append(lines, ev...), '\n')
		}
	}
	return lines
}

// Agent names the agent whose rows or objects a test's store holds, in a
// database or bucket other tests share: one per folder the test makes.
func Agent(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return "test-" + hex.EncodeToString(h[:8])
}
