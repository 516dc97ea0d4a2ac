package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

const testThread = "telegram:42"

// makeEvent returns the event of seq with a text of n bytes, the same bytes for
// the same arguments; seq 1 names the thread.
func makeEvent(seq int64, n int) []byte { return storetest.Message(seq, n, testThread) }

// text is n bytes of printable text that differ by seq.
func text(seq int64, n int) string { return storetest.Text(seq, n) }

// sizeOf gives events of varied sizes: mostly small, a few large.
func sizeOf(seq int64) int {
	switch {
	case seq%41 == 0:
		return 300 << 10
	case seq%5 == 0:
		return 3000
	}
	return 100 + int(seq%7)*40
}

func open(t testing.TB, dir string) *Conversation {
	t.Helper()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func fill(t testing.TB, c *Conversation, from, to int64) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		if err := c.Append(context.Background(), seq, makeEvent(seq, sizeOf(seq))); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
}

// collect reads from from, at most limit events (0: all), checking each
// is the event its seq says.
func collect(t testing.TB, c *Conversation, from int64, reverse bool, limit int) []int64 {
	t.Helper()
	var got []int64
	var bad error
	err := c.Read(context.Background(), from, reverse, func(seq int64, ev []byte) bool {
		if !bytes.Equal(ev, makeEvent(seq, sizeOf(seq))) && bad == nil {
			bad = fmt.Errorf("seq %d: the bytes differ", seq)
		}
		got = append(got, seq)
		return limit == 0 || len(got) < limit
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad != nil {
		t.Fatal(bad)
	}
	return got
}

func equal(a, b []int64) bool {
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

func TestOpenCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	if last, err := c.Last(context.Background()); err != nil || last != 0 {
		t.Fatalf("Last = %d, %v", last, err)
	}
	if got := collect(t, c, 1, false, 0); len(got) != 0 {
		t.Fatalf("read %v from nothing", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the folder holds %d files", len(ents))
	}
}

func TestAppendFoldsAndReads(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	const n = 200
	fill(t, c, 1, n)
	if last, err := c.Last(context.Background()); err != nil || last != n {
		t.Fatalf("Last = %d, %v", last, err)
	}
	// 200 events: six frames of 32 (or fewer: 300 KiB events fill 1 MiB
	// sooner), and the rest in the tail.
	if fi, err := os.Stat(filepath.Join(dir, FramesName)); err != nil || fi.Size() == 0 {
		t.Fatalf("no frames: %v", err)
	}
	for _, tc := range []struct {
		from    int64
		reverse bool
		limit   int
		want    []int64
	}{
		{1, false, 0, storetest.Span(1, n)},
		{0, true, 0, storetest.Span(n, 1)},
		{0, true, 32, storetest.Span(n, n-31)},
		{n + 5, true, 3, storetest.Span(n, n-2)},
		{100, false, 10, storetest.Span(100, 109)},
		{33, false, 1, []int64{33}},
		{32, true, 0, storetest.Span(32, 1)},
		{150, true, 40, storetest.Span(150, 111)},
		{n, false, 0, []int64{n}},
		{n + 1, false, 0, nil},
	} {
		got := collect(t, c, tc.from, tc.reverse, tc.limit)
		if !equal(got, tc.want) {
			t.Errorf("Read(%d, %v) limit %d = %v; want %v", tc.from, tc.reverse, tc.limit, got, tc.want)
		}
	}
	th, err := c.Thread()
	if err != nil || th != testThread {
		t.Fatalf("Thread = %q, %v", th, err)
	}
}

func TestAppendRefuses(t *testing.T) {
	c := open(t, t.TempDir())
	ctx := context.Background()
	if err := c.Append(ctx, 2, makeEvent(2, 10)); !errors.Is(err, store.ErrGap) {
		t.Fatalf("seq 2 first: %v", err)
	}
	fill(t, c, 1, 70)
	for _, seq := range []int64{3, 40, 69, 70} {
		if err := c.Append(ctx, seq, makeEvent(seq, sizeOf(seq))); err != nil {
			t.Errorf("the same bytes at %d again: %v", seq, err)
		}
		if err := c.Append(ctx, seq, makeEvent(seq, sizeOf(seq)+1)); !errors.Is(err, store.ErrSeqTaken) {
			t.Errorf("other bytes at %d: %v", seq, err)
		}
	}
	if err := c.Append(ctx, 72, makeEvent(72, 10)); !errors.Is(err, store.ErrGap) {
		t.Errorf("a gap: %v", err)
	}
	for _, bad := range [][]byte{[]byte(`{"seq":71,"x":1`), []byte("{\"seq\":71}\n"), makeEvent(70, 3), []byte(`[71]`)} {
		if err := c.Append(ctx, 71, bad); !errors.Is(err, store.ErrBadEvent) {
			t.Errorf("append %q: %v", bad, err)
		}
	}
	if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 70)) {
		t.Fatalf("read %v", got)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 1, 45)
	c.Close()
	d := open(t, dir)
	fill(t, d, 46, 80)
	if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 80)) {
		t.Fatalf("the first, closed and used again, read %v", got)
	}
	if got := collect(t, d, 0, true, 0); !equal(got, storetest.Span(80, 1)) {
		t.Fatalf("read %v", got)
	}
}

// TestZstdReadsIt runs the zstd program on events.zst: it prints exactly
// the framed events, as lines, the skippable frames skipped.
func TestZstdReadsIt(t *testing.T) {
	if _, err := exec.LookPath("zstd"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI installs zstd; it is not on PATH")
		}
		t.Skip("no zstd program")
	}
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 1, 100)
	var s snap
	if _, err := c.snapshot(context.Background(), &s, false); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for seq := int64(1); seq <= s.framed; seq++ {
		want = append(append(want, makeEvent(seq, sizeOf(seq))...), '\n')
	}
	out, err := exec.Command("zstd", "-dc", filepath.Join(dir, FramesName)).Output()
	if err != nil {
		t.Fatalf("zstd -dc: %v", err)
	}
	if s.framed < 64 || !bytes.Equal(out, want) {
		t.Fatalf("zstd -dc printed %d bytes; want the %d framed events' %d", len(out), s.framed, len(want))
	}
	if err := exec.Command("zstd", "-t", filepath.Join(dir, FramesName)).Run(); err != nil {
		t.Fatalf("zstd -t: %v", err)
	}
}

// TestDuplicateReadOnce leaves the tail as a fold stopped after its frame
// was on the disk leaves it: its events are read once, and the next
// Append empties it.
func TestDuplicateReadOnce(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 1, 31)
	tail := readFile(t, filepath.Join(dir, TailName))
	fill(t, c, 32, 32) // the fold
	if n := len(readFile(t, filepath.Join(dir, TailName))); n != 0 {
		t.Fatalf("the tail holds %d bytes after the fold", n)
	}
	tail = append(tail, append(makeEvent(32, sizeOf(32)), '\n')...)
	if err := os.WriteFile(filepath.Join(dir, TailName), tail, FileMode); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 32)) || !c.sawDuplicate {
		t.Fatalf("read %v (saw the copy: %v)", got, c.sawDuplicate)
	}
	if got := collect(t, c, 0, true, 0); !equal(got, storetest.Span(32, 1)) {
		t.Fatalf("read back %v", got)
	}
	fill(t, c, 33, 33)
	if got := readFile(t, filepath.Join(dir, TailName)); !bytes.Equal(got, append(makeEvent(33, sizeOf(33)), '\n')) {
		t.Fatalf("the tail holds %q", got)
	}
}

// TestCutUnitCutOff leaves a unit cut short at the end of events.zst: it
// is not read, and the next fold cuts it off, keeping it beside.
func TestCutUnitCutOff(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 1, 40)
	zst := filepath.Join(dir, FramesName)
	before := readFile(t, zst)
	var s snap
	c.snapshot(context.Background(), &s, false)
	// Frame events 33…40 by hand, and keep part of the unit.
	enc, _ := encoders.get()
	u := enc.EncodeAll(s.tail[s.skip:], nil)
	encoders.put()
	u = appendSeal(u, len(u), int(s.count), s.tlast)
	for _, cut := range []int{1, 5, len(u) / 2, len(u) - SealSize, len(u) - 1} {
		if err := os.WriteFile(zst, append(append([]byte(nil), before...), u[:cut]...), FileMode); err != nil {
			t.Fatal(err)
		}
		if got := collect(t, c, 0, true, 0); !equal(got, storetest.Span(40, 1)) {
			t.Fatalf("cut at %d: read %v", cut, got)
		}
		if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 40)) {
			t.Fatalf("cut at %d: read %v", cut, got)
		}
	}
	fill(t, c, 41, 64) // the fold
	if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 64)) {
		t.Fatalf("read %v", got)
	}
	torn := readFile(t, filepath.Join(dir, TornFramesName))
	if !bytes.HasPrefix(torn, fmt.Appendf(nil, "# %s offset %d, %d bytes, cut ", FramesName, len(before), len(u)-1)) {
		t.Fatalf("the torn file starts %q", torn[:min(len(torn), 80)])
	}
	c.snapshot(context.Background(), &s, false)
	if s.end != s.zsize || s.framed != 64 {
		t.Fatalf("after the fold: whole units end at %d of %d, framed %d", s.end, s.zsize, s.framed)
	}
}

func TestTornTailLine(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir)
	fill(t, c, 1, 10)
	path := filepath.Join(dir, TailName)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(makeEvent(11, 50)[:20])
	f.Close()
	if last, err := c.Last(context.Background()); err != nil || last != 10 {
		t.Fatalf("Last = %d, %v", last, err)
	}
	fill(t, c, 11, 12)
	if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 12)) {
		t.Fatalf("read %v", got)
	}
	if torn := readFile(t, filepath.Join(dir, TornTailName)); !bytes.Contains(torn, makeEvent(11, 50)[:20]) {
		t.Fatalf("the torn line was not kept: %q", torn)
	}
}

func TestCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		harm func(t *testing.T, dir string)
	}{
		{"a flipped byte in a frame", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, FramesName), 100)
		}},
		{"a bad thread magic", func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, FramesName), 0)
		}},
		{"a gap in the tail", func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, TailName), os.O_WRONLY|os.O_APPEND, 0)
			f.Write(append(makeEvent(47, 10), '\n'))
			f.Close()
		}},
		{"garbage in the tail", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, TailName), []byte("hello\n"), FileMode)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := open(t, dir)
			fill(t, c, 1, 40)
			tc.harm(t, dir)
			err := c.Read(context.Background(), 1, store.Forward, func(int64, []byte) bool { return true })
			var ce *CorruptError
			if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
				t.Fatalf("read: %v; want corruption", err)
			}
			t.Log(err)
		})
	}
}

func flip(t *testing.T, path string, off int) {
	b := readFile(t, path)
	b[off] ^= 0x5a
	if err := os.WriteFile(path, b, FileMode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCanceled(t *testing.T) {
	c := open(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Append(ctx, 1, makeEvent(1, 10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("append: %v", err)
	}
}

// TestCodecsLetGo checks an encoder is made once for many folds and let go
// when nobody folds for a while, its timer with it. The idle time passes
// in a synctest bubble, at once.
func TestCodecsLetGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &held[*int]{make: func() (*int, error) { return new(int), nil }, close: func(*int) {}, idle: idleAfter}
		for range 5 {
			if _, err := h.get(); err != nil {
				t.Fatal(err)
			}
			h.put()
		}
		if h.made != 1 || !h.holding() {
			t.Fatalf("made %d times, holding %v", h.made, h.holding())
		}
		time.Sleep(2 * h.idle) // the idleness under test, in the bubble's fake time
		synctest.Wait()
		h.mu.Lock()
		ok, timer := h.ok, h.timer
		h.mu.Unlock()
		if ok || timer != nil {
			t.Fatalf("still held after %v idle", 2*h.idle)
		}
		h.get()
		h.put()
		if h.made != 2 {
			t.Fatalf("made %d times", h.made)
		}
	})
}

func TestKeepsNoCopy(t *testing.T) {
	var conv store.Conversation = open(t, t.TempDir())
	k, ok := conv.(interface{ KeepsNoCopy() bool })
	if !ok || !k.KeepsNoCopy() {
		t.Fatal("a compact conversation says it keeps a copy")
	}
}
