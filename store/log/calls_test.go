package log

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/disk"
)

// calls counts the calls a Conversation makes on its filesystem.
type calls struct {
	open, stat, read, write, lock, sync int
}

// countedFS is a Mem whose files count their calls.
type countedFS struct {
	*disk.Mem
	n *calls
}

func (c countedFS) OpenFile(name string, flag int, perm fs.FileMode) (disk.File, error) {
	c.n.open++
	f, err := c.Mem.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countedFile{File: f, n: c.n}, nil
}

type countedFile struct {
	disk.File
	n *calls
}

func (f countedFile) Stat() (disk.Info, error) { f.n.stat++; return f.File.Stat() }
func (f countedFile) ReadAt(b []byte, off int64) (int, error) {
	f.n.read++
	return f.File.ReadAt(b, off)
}
func (f countedFile) WriteAt(b []byte, off int64) (int, error) {
	f.n.write++
	return f.File.WriteAt(b, off)
}
func (f countedFile) Sync() error   { f.n.sync++; return f.File.Sync() }
func (f countedFile) SyncFS() error { f.n.sync++; return f.File.SyncFS() }
func (f countedFile) Lock(ctx context.Context, ex bool) error {
	f.n.lock++
	return f.File.Lock(ctx, ex)
}

// memFolder is a conversation's folder on a new disk.Mem.
func memFolder(t *testing.T) (*disk.Mem, string) {
	t.Helper()
	m := disk.NewMem()
	const dir = "/home/chats/t"
	if err := m.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// openMem opens the log in dir on fsys, closed when t ends.
func openMem(t *testing.T, fsys disk.FS, dir string) *Conversation {
	t.Helper()
	c, err := OpenOptions(dir, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lastAfterCrash is the last seq of the log in dir on what a crash of m
// now leaves.
func lastAfterCrash(t *testing.T, m *disk.Mem, dir string) int64 {
	t.Helper()
	img := openMem(t, m.Crash(), dir)
	defer img.Close()
	last, err := img.Last(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestTurnCalls counts what a turn's calls on a log of 100 events cost:
// the end is read once and then checked with one fstat, the file opened
// once and read-write, the lock taken once for the message and its
// answer, and one sync makes both durable; the next turn's Last is one
// fstat while nobody appended since.
func TestTurnCalls(t *testing.T) {
	ctx := context.Background()
	m, dir := memFolder(t)
	var n calls
	fsys := countedFS{Mem: m, n: &n}
	c := openMem(t, fsys, dir)
	for seq := int64(1); seq <= 100; seq++ {
		if err := c.Append(ctx, seq, typicalEvent(seq)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()

	n = calls{}
	c = openMem(t, fsys, dir)
	step := func(name string, want calls, do func() error) {
		t.Helper()
		n = calls{}
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n != want {
			t.Errorf("%s made %+v; want %+v", name, n, want)
		}
	}
	one := func(int64, []byte) bool { return false }
	step("Last", calls{open: 1, stat: 2, read: 1}, func() error {
		last, err := c.Last(ctx)
		if err == nil && last != 100 {
			t.Errorf("last %d", last)
		}
		return err
	})
	step("the first event", calls{stat: 1, read: 1}, func() error { return c.Read(ctx, 1, store.Forward, one) })
	step("the last event", calls{stat: 1}, func() error { return c.Read(ctx, store.FromLast, store.Backward, one) })
	step("the message, deferred", calls{lock: 1, stat: 1, write: 1}, func() error {
		return c.AppendDeferred(ctx, 101, typicalEvent(101))
	})
	k := 0
	step("the window, 32 events", calls{read: 1}, func() error {
		return c.Read(ctx, store.FromLast, store.Backward, func(int64, []byte) bool { k++; return k < 32 })
	})
	step("the answer", calls{write: 1, sync: 1}, func() error { return c.Append(ctx, 102, typicalEvent(102)) })

	if last := lastAfterCrash(t, m, dir); last != 102 {
		t.Errorf("after a crash the last is %d; want 102: the answer's sync made the message durable too", last)
	}
	// The next turn finds the end it made durable with one fstat, though
	// the lock was let go; and a line another writer appended since.
	lastIs := func(want int64) func() error {
		return func() error {
			last, err := c.Last(ctx)
			if err == nil && last != want {
				t.Errorf("last %d; want %d", last, want)
			}
			return err
		}
	}
	step("the next turn's Last", calls{stat: 1}, lastIs(102))
	other := openMem(t, m, dir)
	if err := other.Append(ctx, 103, typicalEvent(103)); err != nil {
		t.Fatal(err)
	}
	other.Close()
	step("Last after another's append", calls{stat: 2, read: 1}, lastIs(103))

	// A warm turn's Hold: the lock and one fstat, and its appends read the
	// end from memory under it.
	step("a warm turn's Hold", calls{lock: 1, stat: 1}, func() error {
		last, err := c.Hold(ctx)
		if err == nil && last != 103 {
			t.Errorf("Hold: last %d; want 103", last)
		}
		return err
	})
	step("its message, deferred", calls{write: 1}, func() error { return c.AppendDeferred(ctx, 104, typicalEvent(104)) })
	step("its answer", calls{write: 1, sync: 1}, func() error { return c.Append(ctx, 105, typicalEvent(105)) })
	// One that appends nothing lets go with no sync.
	step("a Hold", calls{lock: 1, stat: 1}, func() error { _, err := c.Hold(ctx); return err })
	step("its Commit, nothing appended", calls{}, func() error { return c.Commit(ctx) })
	if last := lastAfterCrash(t, m, dir); last != 105 {
		t.Errorf("after a crash the last is %d; want 105", last)
	}
}

// TestHold: a Hold keeps the writers' lock until a Commit with nothing
// appended, and the end it read counts as the end only when no torn line
// is past it: the append after cuts the torn line, as without a Hold.
func TestHold(t *testing.T) {
	ctx := context.Background()
	m, dir := memFolder(t)
	a, b := openMem(t, m, dir), openMem(t, m, dir)
	if last, err := a.Hold(ctx); err != nil || last != 0 {
		t.Fatalf("Hold with no log: %d, %v; want 0 and nothing held", last, err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		if err := b.Append(ctx, seq, typicalEvent(seq)); err != nil {
			t.Fatalf("no lock held with no log, yet append %d: %v", seq, err)
		}
	}
	if last, err := a.Hold(ctx); err != nil || last != 3 {
		t.Fatalf("Hold: %d, %v; want 3", last, err)
	}
	busy, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Append(busy, 4, typicalEvent(4)); !errors.Is(err, context.Canceled) {
		t.Errorf("another writer's append under a Hold: %v, want it to wait for the lock", err)
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, 4, typicalEvent(4)); err != nil {
		t.Fatalf("another writer's append after the Commit: %v", err)
	}

	// A torn line past the end: held, then appended after.
	f, err := m.OpenFile(dir+"/events.jsonl", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	// Longer than the lines written after it: one written over it without
	// the cut would leave the rest of it.
	torn := bytes.Repeat([]byte(`{"seq":5,"x":"`), 3*len(typicalEvent(5))/14)
	if _, err := f.WriteAt(torn, st.Size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if last, err := a.Hold(ctx); err != nil || last != 4 {
		t.Fatalf("Hold over a torn line: %d, %v; want 4", last, err)
	}
	if err := a.AppendDeferred(ctx, 5, typicalEvent(5)); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, 6, typicalEvent(6)); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	err = b.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		if !bytes.Equal(ev, typicalEvent(seq)) {
			t.Errorf("seq %d reads %.60q", seq, ev)
		}
		seqs = append(seqs, seq)
		return true
	})
	if err != nil || len(seqs) != 6 || seqs[5] != 6 {
		t.Errorf("read back %v, %v; want 1 to 6", seqs, err)
	}
	want := int64(0)
	for seq := int64(1); seq <= 6; seq++ {
		want += int64(len(typicalEvent(seq))) + 1
	}
	if st, err = fileInfo(m, dir+"/events.jsonl"); err != nil || st.Size != want {
		t.Errorf("the log is %d bytes (%v); want %d, its six lines: the torn line was not cut", st.Size, err, want)
	}
}

// fileInfo is the size and stamp of the file at path in m.
func fileInfo(m *disk.Mem, path string) (disk.Info, error) {
	f, err := m.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return disk.Info{}, err
	}
	defer f.Close()
	return f.Stat()
}

// TestDeferredHoldsTheLock: from a line appended deferred to its commit,
// its writer holds the writers' lock, so no other writer's line follows a
// line that is not durable; Commit makes it durable and lets go.
func TestDeferredHoldsTheLock(t *testing.T) {
	ctx := context.Background()
	m, dir := memFolder(t)
	a, b := openMem(t, m, dir), openMem(t, m, dir)
	if err := a.Append(ctx, 1, typicalEvent(1)); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendDeferred(ctx, 2, typicalEvent(2)); err != nil {
		t.Fatal(err)
	}
	if last, err := b.Last(ctx); err != nil || last != 2 {
		t.Errorf("another reader's last is %d (%v): a deferred line is read", last, err)
	}
	if n := lastAfterCrash(t, m, dir); n != 1 {
		t.Errorf("a crash now keeps %d events; want 1: seq 2 is not durable yet", n)
	}
	busy, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Append(busy, 3, typicalEvent(3)); !errors.Is(err, context.Canceled) {
		t.Errorf("another writer's append while the line waits: %v, want it to wait for the lock", err)
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, 3, typicalEvent(3)); err != nil {
		t.Fatalf("another writer's append after the commit: %v", err)
	}
	if n := lastAfterCrash(t, m, dir); n != 3 {
		t.Errorf("after the commit a crash keeps %d events; want 3", n)
	}
}

// TestFailedSyncCutsTheMessage: an answer whose fdatasync fails cuts the
// message appended deferred before it with its own line. The failed sync
// kept both readable and never durable (as Linux does), so a message left
// there would be lost under the lines written after it, which a later
// sync does not write: here the caller gives up, and another message and
// answer follow.
func TestFailedSyncCutsTheMessage(t *testing.T) {
	ctx := context.Background()
	m, dir := memFolder(t)
	c := openMem(t, m, dir)
	if err := c.Append(ctx, 1, typicalEvent(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendDeferred(ctx, 2, typicalEvent(2)); err != nil {
		t.Fatal(err)
	}
	// The answer's write, then its fdatasync, which fails.
	m.Fail(disk.Plan{At: m.Ops() + 2, Err: syscall.EIO, Keep: true})
	if err := c.Append(ctx, 3, typicalEvent(3)); err == nil {
		t.Fatal("the answer's append met a failing fdatasync and returned nil")
	}
	m.Fail(disk.Plan{})
	if last, err := c.Last(ctx); err != nil || last != 1 {
		t.Fatalf("after the failed sync the last is %d (%v); want 1, the message cut with its answer", last, err)
	}
	for seq := int64(2); seq <= 3; seq++ {
		e := event.Event{Seq: seq, Time: time.Unix(1767225600, 0).UTC(), Type: event.TypeMessage, Text: "another message"}
		if err := c.Append(ctx, seq, event.Append(nil, &e)); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
	img := openMem(t, m.Crash(), dir)
	n := int64(0)
	err := img.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool { n = seq; return true })
	if err != nil || n != 3 {
		t.Errorf("a crash after keeps %d events (%v); want 3, each whole", n, err)
	}
}
