package log

import (
	"context"
	"fmt"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// typicalEvent is an answer of about 600 bytes, as a turn writes one.
func typicalEvent(seq int64) []byte { return storetest.Answer(seq, text(seq, 300)) }

// typicalLog writes n typical events to a new folder's log.
func typicalLog(tb testing.TB, n int64) string {
	dir := tb.TempDir()
	writeLog(tb, dir, n, nil)
	return dir
}

// readLast32 reads the last 32 events of c. It is storetest.ReadLast32 on
// the concrete type, so the function it hands Read does not escape: the
// allocation budgets count the read alone.
func readLast32(c *Conversation) (int, error) {
	n := 0
	err := c.Read(context.Background(), store.FromLast, store.Backward, func(int64, []byte) bool {
		n++
		return n < 32
	})
	return n, err
}

// benchRead runs read, which hands out 32 events, on logs of 1,000 and
// 100,000 typical events (events=N).
func benchRead(b *testing.B, read func(c *Conversation, n int64) (int, error)) {
	for _, n := range []int64{1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			c := open(b, typicalLog(b, n))
			b.ReportAllocs()
			for b.Loop() {
				if got, err := read(c, n); err != nil || got != 32 {
					b.Fatal(got, err)
				}
			}
		})
	}
}

func BenchmarkReadLast32(b *testing.B) {
	benchRead(b, func(c *Conversation, _ int64) (int, error) { return readLast32(c) })
}

func BenchmarkReadFromMiddle(b *testing.B) {
	benchRead(b, func(c *Conversation, n int64) (int, error) {
		got := 0
		err := c.Read(context.Background(), n/2, store.Forward, func(int64, []byte) bool {
			got++
			return got < 32
		})
		return got, err
	})
}

func BenchmarkLast(b *testing.B) {
	c := open(b, typicalLog(b, 100000))
	b.ReportAllocs()
	for b.Loop() {
		if last, err := c.Last(context.Background()); err != nil || last != 100000 {
			b.Fatal(last, err)
		}
	}
}

// BenchmarkAppend appends typical events with fdatasync each, on a disk
// and on tmpfs (storetest.BenchAppendDisks).
func BenchmarkAppend(b *testing.B) {
	storetest.BenchAppendDisks(b, func(b *testing.B, dir string) store.Conversation { return open(b, dir) }, typicalEvent, 1000)
}

func TestReadLast32Allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	for _, n := range []int64{1000, 100000} {
		c := open(t, typicalLog(t, n))
		if _, err := readLast32(c); err != nil { // warm the buffer
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if got, err := readLast32(c); err != nil || got != 32 {
				t.Fatal(got, err)
			}
		})
		if allocs != 0 {
			t.Errorf("events=%d: reading the last 32 allocates %v times; want 0", n, allocs)
		}
		allocs = testing.AllocsPerRun(100, func() {
			if _, err := c.Last(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("events=%d: Last allocates %v times; want 0", n, allocs)
		}
		allocs = testing.AllocsPerRun(20, func() {
			got := 0
			c.Read(context.Background(), n/3, store.Forward, func(int64, []byte) bool { got++; return got < 32 })
		})
		if allocs != 0 {
			t.Errorf("events=%d: reading 32 from the middle allocates %v times; want 0", n, allocs)
		}
	}
}
