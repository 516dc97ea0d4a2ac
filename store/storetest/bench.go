package storetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// TypicalEvent is an answer of about 600 bytes, as a turn writes one: what
// every store's benchmarks append and read.
func TypicalEvent(seq int64) []byte {
	return Answer(seq, strings.Repeat(fmt.Sprintf("answer %d, ", seq), 300/12))
}

// Answer is TypicalEvent with text as its text.
func Answer(seq int64, text string) []byte {
	t := time.Unix(1767225600+seq, 123456789).UTC()
	e := event.Event{
		Seq:        seq,
		Time:       t,
		Type:       event.TypeAnswer,
		Text:       text,
		Model:      "claude-opus-5-5",
		Provider:   "anthropic",
		ResponseID: fmt.Sprintf("msg_01%022d", seq),
		Usage:      event.Usage{Input: 12000 + seq, Output: 420, CacheRead: 11000, CacheWrite: 900},
		LatencyMS:  1834,
		Cost:       0.01834,
		Window:     &event.Window{Start: max(1, seq-40), StartTime: t.Add(-time.Hour), TokensBefore: 81234},
	}
	return event.Append(nil, &e)
}

// ReadLast32 reads the last 32 events of c backwards, as a turn reads its
// tail, and returns how many it read.
func ReadLast32(c store.Conversation) (int, error) {
	n := 0
	err := c.Read(context.Background(), store.FromLast, store.Backward, func(int64, []byte) bool {
		n++
		return n < 32
	})
	return n, err
}

// BenchAppend appends a typical event to c per iteration, after the from
// events c holds; the events are made outside the timer.
func BenchAppend(b *testing.B, c store.Conversation, from int64) {
	ctx := context.Background()
	events := make([][]byte, 0, 1024)
	b.ReportAllocs()
	seq := from
	for b.Loop() {
		seq++
		i := seq - from - 1
		if i >= int64(len(events)) {
			b.StopTimer()
			events = append(events, TypicalEvent(seq))
			b.StartTimer()
		}
		if err := c.Append(ctx, seq, events[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchAppendDisks appends an event (event(seq)) with fdatasync each
// iteration to a conversation open makes in a new folder: "disk" in b's
// temporary folder (on this project's machines, a disk), "tmpfs" in
// /dev/shm, where fdatasync costs nothing, to show the cost of the rest.
// The first made events are made before the timer starts, the rest
// outside it.
func BenchAppendDisks(b *testing.B, open func(b *testing.B, dir string) store.Conversation, event func(seq int64) []byte, made int) {
	for _, where := range []string{"disk", "tmpfs"} {
		b.Run(where, func(b *testing.B) {
			dir := b.TempDir()
			if where == "tmpfs" {
				d, err := os.MkdirTemp("/dev/shm", "lnk-bench-")
				if err != nil {
					b.Skip("no /dev/shm:", err)
				}
				b.Cleanup(func() { os.RemoveAll(d) })
				dir = d
			}
			c := open(b, dir)
			events := make([][]byte, made)
			for i := range events {
				events[i] = event(int64(i + 1))
			}
			ctx := context.Background()
			b.ReportAllocs()
			seq := int64(0)
			for b.Loop() {
				seq++
				if seq > int64(len(events)) {
					b.StopTimer()
					events = append(events, event(seq))
					b.StartTimer()
				}
				if err := c.Append(ctx, seq, events[seq-1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchReadLast32 reads the last 32 events of c per iteration, as a turn
// reads its tail.
func BenchReadLast32(b *testing.B, c store.Conversation) {
	b.ReportAllocs()
	for b.Loop() {
		if got, err := ReadLast32(c); err != nil || got != 32 {
			b.Fatal(got, err)
		}
	}
}

// BenchReadLast32Sizes runs BenchReadLast32 as events=1000 and
// events=100000, on a conversation of that many typical events filled
// makes.
func BenchReadLast32Sizes(b *testing.B, filled func(b *testing.B, n int64) store.Conversation) {
	for _, n := range []int64{1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			BenchReadLast32(b, filled(b, n))
		})
	}
}

// MemDir is a new folder for tb in memory (/dev/shm) where the machine has
// one, else in tb's temporary folder; it is removed when tb ends. It is for
// what a test needs kept but not on a disk: a fake server's objects, which
// it syncs and renames file by file.
func MemDir(tb testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "lnk-test-")
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
