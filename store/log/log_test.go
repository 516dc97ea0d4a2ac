package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// makeEvent returns the event of seq with a text of n bytes, the same bytes for
// the same arguments.
func makeEvent(seq int64, n int) []byte { return storetest.Message(seq, n, "") }

// text is n bytes of printable text that differ by seq.
func text(seq int64, n int) string { return storetest.Text(seq, n) }

// sizeOf gives events of varied sizes: mostly small, some past a read chunk.
func sizeOf(seq int64) int {
	switch {
	case seq%17 == 0:
		return 70 << 10
	case seq%5 == 0:
		return 3000
	}
	return 100 + int(seq%7)*40
}

// open opens the conversation in dir and closes it at the test's end.
func open(t testing.TB, dir string) *Conversation {
	t.Helper()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fill appends events 1..n, sized by sizeOf.
func fill(t testing.TB, c *Conversation, n int64) {
	t.Helper()
	ctx := context.Background()
	for seq := int64(1); seq <= n; seq++ {
		if err := c.Append(ctx, seq, makeEvent(seq, sizeOf(seq))); err != nil {
			t.Fatal(err)
		}
	}
}

// writeLog writes events 1..n straight to dir's log, without the lock or
// fdatasync, so tests can build long logs quickly, and returns the bytes.
// The events are event(seq, size(seq)), or typicalEvent's with a nil size.
func writeLog(t testing.TB, dir string, n int64, size func(int64) int) []byte {
	t.Helper()
	var b []byte
	for seq := int64(1); seq <= n; seq++ {
		if size == nil {
			b = append(b, typicalEvent(seq)...)
		} else {
			b = append(b, makeEvent(seq, size(seq))...)
		}
		b = append(b, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b
}

type seen struct {
	seq   int64
	event string
}

// collect reads from from and returns what fn saw, stopping after limit
// events when limit > 0.
func collect(c *Conversation, from int64, reverse bool, limit int) ([]seen, error) {
	var got []seen
	err := c.Read(context.Background(), from, reverse, func(seq int64, ev []byte) bool {
		got = append(got, seen{seq, string(ev)})
		return limit <= 0 || len(got) < limit
	})
	return got, err
}

// filled caches the events fill writes, by seq.
var filled sync.Map

func filledEvent(seq int64) string {
	if e, ok := filled.Load(seq); ok {
		return e.(string)
	}
	e := string(makeEvent(seq, sizeOf(seq)))
	filled.Store(seq, e)
	return e
}

// want lists the events from..to (to < from for reverse) as fill wrote them.
func want(from, to int64) []seen {
	var w []seen
	step := int64(1)
	if to < from {
		step = -1
	}
	for seq := from; ; seq += step {
		w = append(w, seen{seq, filledEvent(seq)})
		if seq == to {
			return w
		}
	}
}

func equalSeen(a, b []seen) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func seqs(s []seen) []int64 {
	var n []int64
	for _, x := range s {
		n = append(n, x.seq)
	}
	return n
}

func TestOpenCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	ctx := context.Background()
	last, err := c.Last(ctx)
	if err != nil || last != 0 {
		t.Fatalf("Last = %d, %v; want 0, nil", last, err)
	}
	err = c.Read(ctx, 1, store.Forward, func(int64, []byte) bool {
		t.Error("fn called on an empty conversation")
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Read(ctx, store.FromLast, store.Backward, func(int64, []byte) bool { t.Error("fn called"); return true }); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("the folder holds %v after opening and reading", names)
	}
	if c.f != nil || c.buf != nil {
		t.Fatal("Close kept a file or a buffer")
	}
}

func TestAppendOrder(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 40)
	last, err := c.Last(context.Background())
	if err != nil || last != 40 {
		t.Fatalf("Last = %d, %v; want 40", last, err)
	}
	var wantFile []byte
	for _, s := range want(1, 40) {
		wantFile = append(append(wantFile, s.event...), '\n')
	}
	if got := readFile(t, filepath.Join(dir, FileName)); !bytes.Equal(got, wantFile) {
		t.Fatal("the file is not the events in order, one a line")
	}
	if _, err := os.Stat(filepath.Join(dir, TornFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a torn file without a tear: %v", err)
	}
}

func TestAppendRefuses(t *testing.T) {
	big := []byte(fmt.Sprintf(`{"seq":4,"type":"message","text":"%s"}`, strings.Repeat("x", event.MaxBytes)))
	tests := []struct {
		name  string
		seq   int64
		event []byte
		err   error // nil: accepted
	}{
		{"next", 4, makeEvent(4, 10), nil},
		{"last again, same bytes", 3, makeEvent(3, sizeOf(3)), nil},
		{"first again, same bytes", 1, makeEvent(1, sizeOf(1)), nil},
		{"last taken", 3, makeEvent(3, 11), store.ErrSeqTaken},
		{"first taken", 1, makeEvent(1, 11), store.ErrSeqTaken},
		{"same bytes but one", 2, append(makeEvent(2, sizeOf(2))[:len(makeEvent(2, sizeOf(2)))-1], ' ', '}'), store.ErrSeqTaken},
		{"gap", 5, makeEvent(5, 10), store.ErrGap},
		{"far gap", 1000, makeEvent(1000, 10), store.ErrGap},
		{"seq differs from the event's", 4, makeEvent(5, 10), store.ErrBadEvent},
		{"seq 0", 0, []byte(`{"seq":0,"type":"message"}`), store.ErrBadEvent},
		{"negative seq", -1, []byte(`{"seq":-1,"type":"message"}`), store.ErrBadEvent},
		{"newline inside", 4, []byte("{\"seq\":4,\n\"type\":\"message\"}"), store.ErrBadEvent},
		{"newline after", 4, append(makeEvent(4, 10), '\n'), store.ErrBadEvent},
		{"not JSON after the seq", 4, []byte(`{"seq":4,"type":`), store.ErrBadEvent},
		{"not an object", 4, []byte(`[4]`), store.ErrBadEvent},
		{"empty", 4, nil, store.ErrBadEvent},
		{"too big", 4, big, store.ErrBadEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := open(t, dir)
			fill(t, c, 3)
			path := filepath.Join(dir, FileName)
			before := readFile(t, path)
			err := c.Append(context.Background(), tt.seq, tt.event)
			after := readFile(t, path)
			if tt.err == nil {
				if err != nil {
					t.Fatalf("Append: %v", err)
				}
				if tt.seq == 4 && !bytes.Equal(after, append(append(before, tt.event...), '\n')) {
					t.Fatal("the event is not the new last line")
				}
				if tt.seq < 4 && !bytes.Equal(after, before) {
					t.Fatal("the same bytes again changed the file")
				}
				return
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("Append = %v; want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("%q does not say which file", err)
			}
			if !bytes.Equal(after, before) {
				t.Fatal("a refused Append changed the file")
			}
		})
	}
}

func TestRead(t *testing.T) {
	for _, n := range []int64{1, 2, 7, 90, 300} {
		dir := t.TempDir()
		c := open(t, dir)
		if n < 40 {
			fill(t, c, n)
		} else {
			writeLog(t, dir, n, sizeOf)
		}
		for from := int64(-1); from <= n+2; from++ {
			start := from
			if from <= 0 {
				start = n
			}
			got, err := collect(c, from, false, 0)
			if err != nil {
				t.Fatalf("n=%d: forward from %d: %v", n, from, err)
			}
			var w []seen
			if start <= n {
				w = want(start, n)
			}
			if !equalSeen(got, w) {
				t.Fatalf("n=%d: forward from %d: got seqs %v", n, from, seqs(got))
			}
			got, err = collect(c, from, true, 0)
			if err != nil {
				t.Fatalf("n=%d: reverse from %d: %v", n, from, err)
			}
			if !equalSeen(got, want(min(start, n), 1)) {
				t.Fatalf("n=%d: reverse from %d: got seqs %v", n, from, seqs(got))
			}
		}
	}
}

func TestReadStopsEarly(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 500, sizeOf)
	c := open(t, dir)
	for _, tt := range []struct {
		from    int64
		reverse bool
		limit   int
		want    []seen
	}{
		{0, true, 32, want(500, 469)},
		{0, true, 1, want(500, 500)},
		{250, true, 3, want(250, 248)},
		{1, false, 5, want(1, 5)},
		{123, false, 2, want(123, 124)},
		{499, false, 1, want(499, 499)},
		{0, false, 1, want(500, 500)},
	} {
		got, err := collect(c, tt.from, tt.reverse, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !equalSeen(got, tt.want) {
			t.Errorf("from %d reverse %v limit %d: got seqs %v", tt.from, tt.reverse, tt.limit, seqs(got))
		}
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 5)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = open(t, dir)
	ctx := context.Background()
	if last, err := c.Last(ctx); err != nil || last != 5 {
		t.Fatalf("Last after reopening = %d, %v", last, err)
	}
	for seq := int64(6); seq <= 8; seq++ {
		if err := c.Append(ctx, seq, makeEvent(seq, sizeOf(seq))); err != nil {
			t.Fatal(err)
		}
	}
	// The same Conversation again after Close.
	c.Close()
	if err := c.Append(ctx, 9, makeEvent(9, sizeOf(9))); err != nil {
		t.Fatal(err)
	}
	got, err := collect(c, 1, false, 0)
	if err != nil || !equalSeen(got, want(1, 9)) {
		t.Fatalf("got seqs %v, %v", seqs(got), err)
	}
}

func TestTornTailRepaired(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int64  // complete lines
		torn []byte // bytes after them
	}{
		{"part of a line", 5, makeEvent(6, 50)[:20]},
		{"a whole event without its newline", 5, makeEvent(6, 50)},
		{"one byte", 5, []byte("{")},
		{"no complete line", 0, makeEvent(1, 50)[:9]},
		{"a long torn line", 3, makeEvent(4, 200<<10)[:150<<10]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			good := writeLog(t, dir, tt.n, sizeOf)
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, append(bytes.Clone(good), tt.torn...), 0o600); err != nil {
				t.Fatal(err)
			}
			c := open(t, dir)
			ctx := context.Background()
			if last, err := c.Last(ctx); err != nil || last != tt.n {
				t.Fatalf("Last = %d, %v; want %d", last, err, tt.n)
			}
			got, err := collect(c, 0, true, 0)
			if err != nil || len(got) != int(tt.n) {
				t.Fatalf("reverse read saw %v, %v", seqs(got), err)
			}
			// A taken seq or a gap does not repair: the file is left alone.
			if err := c.Append(ctx, tt.n+2, makeEvent(tt.n+2, 10)); !errors.Is(err, store.ErrGap) {
				t.Fatalf("Append past the next = %v", err)
			}
			if !bytes.Equal(readFile(t, path), append(bytes.Clone(good), tt.torn...)) {
				t.Fatal("a refused Append changed the file")
			}
			next := makeEvent(tt.n+1, 77)
			if err := c.Append(ctx, tt.n+1, next); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); !bytes.Equal(got, append(append(bytes.Clone(good), next...), '\n')) {
				t.Fatalf("after repair the file ends %q", got[max(0, len(got)-40):])
			}
			kept := readFile(t, filepath.Join(dir, TornFileName))
			head := fmt.Sprintf("# events.jsonl offset %d, %d bytes, cut ", len(good), len(tt.torn))
			if !bytes.HasPrefix(kept, []byte(head)) {
				t.Fatalf("the torn file starts %q; want %q", kept[:min(len(kept), 80)], head)
			}
			_, body, _ := bytes.Cut(kept, []byte("\n"))
			if !bytes.Equal(body, append(bytes.Clone(tt.torn), '\n')) {
				t.Fatal("the torn file does not hold the cut bytes")
			}
		})
	}
}

func TestTornTailsKeptInOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	c := open(t, dir)
	ctx := context.Background()
	for seq := int64(1); seq <= 3; seq++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(fmt.Sprintf(`{"seq":%d,"tor`, seq)))
		f.Close()
		if err := c.Append(ctx, seq, makeEvent(seq, 5)); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(string(readFile(t, filepath.Join(dir, TornFileName))), "\n")
	if len(lines) != 7 || lines[1] != `{"seq":1,"tor` || lines[5] != `{"seq":3,"tor` ||
		!strings.HasPrefix(lines[4], fmt.Sprintf("# events.jsonl offset %d,", 2*len(makeEvent(1, 5))+2)) {
		t.Fatalf("the torn file holds %q", lines)
	}
}

func TestCorruption(t *testing.T) {
	good := writeLog(t, t.TempDir(), 120, sizeOf)
	lines := bytes.SplitAfter(good, []byte("\n"))
	offset := func(i int) int64 { return int64(len(bytes.Join(lines[:i], nil))) }
	replace := func(i int, with string) []byte {
		l := append([][]byte{}, lines...)
		l[i] = []byte(with)
		return bytes.Join(l, nil)
	}
	drop := func(i int) []byte {
		l := append(append([][]byte{}, lines[:i]...), lines[i+1:]...)
		return bytes.Join(l, nil)
	}
	for _, tt := range []struct {
		name   string
		file   []byte
		offset int64 // where the damage is reported
		from   int64 // a read that passes it
		rev    bool
	}{
		{"garbage line, forward", replace(50, "garbage\n"), offset(50), 1, false},
		{"garbage line, reverse", replace(100, "garbage\n"), offset(100), 0, true},
		{"empty line", replace(80, "\n"), offset(80), 70, false},
		{"missing line, forward", drop(60), offset(60), 2, false},
		{"missing line, reverse", drop(110), offset(109), 0, true},
		{"repeated seq", replace(30, string(lines[29])), offset(30), 1, false},
		{"first line not seq 1", drop(0), 0, 0, true},
		{"last line garbage", replace(119, "{\"se\n"), offset(119), 0, true},
		{"last line garbage, forward", replace(119, "{\"se\n"), offset(119), 3, false},
		{"bisection sees a wrong seq", replace(60, strings.Replace(string(lines[60]), `"seq":61`, `"seq":91`, 1)), -1, 61, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, FileName), tt.file, 0o600); err != nil {
				t.Fatal(err)
			}
			c := open(t, dir)
			_, err := collect(c, tt.from, tt.rev, 0)
			var ce *CorruptError
			if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("Read = %v; want a corruption", err)
			}
			if tt.offset >= 0 && ce.Offset != tt.offset {
				t.Errorf("reported at offset %d; want %d (%v)", ce.Offset, tt.offset, err)
			}
			if ce.Path != filepath.Join(dir, FileName) || !strings.Contains(err.Error(), ce.Path) {
				t.Errorf("%v does not say which file", err)
			}
		})
	}
}

func TestAppendOnCorruptEnd(t *testing.T) {
	dir := t.TempDir()
	good := writeLog(t, dir, 3, sizeOf)
	path := filepath.Join(dir, FileName)
	bad := append(bytes.Clone(good), "not an event\n{\"seq\":5,\"tor"...)
	os.WriteFile(path, bad, 0o600)
	c := open(t, dir)
	ctx := context.Background()
	for _, seq := range []int64{4, 5, 6} {
		if err := c.Append(ctx, seq, makeEvent(seq, 5)); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Append(%d) = %v; want a corruption", seq, err)
		}
	}
	if _, err := c.Last(ctx); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Last = %v; want a corruption", err)
	}
	if !bytes.Equal(readFile(t, path), bad) {
		t.Fatal("Append changed a corrupt file")
	}
}

func TestAppendWithoutFolder(t *testing.T) {
	c := open(t, filepath.Join(t.TempDir(), "missing"))
	err := c.Append(context.Background(), 1, makeEvent(1, 5))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Append in a missing folder = %v", err)
	}
}

func TestCanceled(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Append(ctx, 4, makeEvent(4, 5)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append = %v", err)
	}
	if err := c.Read(ctx, 1, store.Forward, func(int64, []byte) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read = %v", err)
	}
	// A reader that cancels mid-read stops at once.
	ctx, cancel = context.WithCancel(context.Background())
	n := 0
	err := c.Read(ctx, 1, store.Forward, func(int64, []byte) bool { n++; cancel(); return true })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("Read = %v after %d events", err, n)
	}
}

func TestLockWaitCanceled(t *testing.T) {
	dir := t.TempDir()
	holder := open(t, dir)
	fill(t, holder, 1)
	if _, err := holder.open(true); err != nil {
		t.Fatal(err)
	}
	if err := holder.f.Lock(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	c := open(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := c.Append(ctx, 2, makeEvent(2, 5)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append while another holds the lock = %v", err)
	}
	holder.f.Unlock()
	if err := c.Append(context.Background(), 2, makeEvent(2, 5)); err != nil {
		t.Fatal(err)
	}
}

func TestSynced(t *testing.T) {
	var n int
	c, err := OpenOptions(t.TempDir(), Options{Synced: func(d time.Duration) { n++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for seq := int64(1); seq <= 3; seq++ {
		if err := c.Append(context.Background(), seq, makeEvent(seq, 5)); err != nil {
			t.Fatal(err)
		}
	}
	if n != 3 {
		t.Fatalf("Synced called %d times for 3 appends", n)
	}
}

func TestIdleHoldsLittle(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 20, func(int64) int { return 1 << 20 })
	c := open(t, dir)
	if _, err := collect(c, 0, true, 0); err != nil {
		t.Fatal(err)
	}
	if cap(c.buf) > keepBuf {
		t.Fatalf("an idle conversation keeps a buffer of %d bytes", cap(c.buf))
	}
}
