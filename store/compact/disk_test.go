package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/internal/disk/disktest"
)

// diskFold is how many events the crash images and the fault loop fold at
// a time: few, so a 100-event script folds 25 times and every operation
// of a fold is crashed at and failed.
const diskFold = 4

// openOn opens the conversation in dir on fsys, folding every diskFold
// events.
func openOn(fsys disk.FS, dir string) (store.Conversation, error) {
	c, err := OpenOptions(dir, Options{FS: fsys})
	if err != nil {
		return nil, err
	}
	c.foldEvents = diskFold
	return c, nil
}

// TestCrashImages crashes the conversation at every open, write, sync,
// truncate and folder sync of a 100-event script that folds 25 times, in
// its appends and in its folds.
func TestCrashImages(t *testing.T) {
	r := disktest.CrashImages(t, openOn, disktest.Options{})
	for _, v := range r.Violations {
		t.Error(v)
	}
	if r.Kinds[disk.OpTruncate] < 25 {
		t.Errorf("%d images after a truncate: the script folded less than it should", r.Kinds[disk.OpTruncate])
	}
	if r.Deferred == 0 {
		t.Error("no crash image was taken between a message appended deferred and its answer's sync")
	}
}

// TestCrashImagesNoSyncDir shows the crash images catch a conversation
// whose new files' names were never made durable.
func TestCrashImagesNoSyncDir(t *testing.T) {
	r := disktest.CrashImages(t, openOn, disktest.Options{SkipSyncDir: true})
	if len(r.Violations) == 0 {
		t.Fatal("with SyncDir doing nothing no crash image lost an acknowledged event")
	}
	t.Logf("first violation: %s", r.Violations[0])
}

// TestFaults fails every operation of a 100-event script that folds 25
// times, once and from then on, with EIO and ENOSPC, fdatasync and the
// folder sync included, a failed fdatasync dropping its bytes and again
// keeping them readable. Built with -race, or with -short, the script is
// 30 events: the loop runs the script once an operation, so its time
// grows as the square of the script's length, and a race-built fold
// takes four times as long.
func TestFaults(t *testing.T) {
	var opts disktest.Options
	if raceOn || testing.Short() {
		opts.Events = 30
	}
	r := disktest.FaultLoop(t, openOn, opts)
	for _, v := range r.Violations {
		t.Error(v)
	}
	for _, k := range []disk.Kind{disk.OpWrite, disk.OpSync, disk.OpTruncate, disk.OpSyncDir} {
		if r.Dropped.Faults[k] == 0 {
			t.Errorf("no fault landed on a %v", k)
		}
	}
	if r.Kept.Faults[disk.OpSync] == 0 {
		t.Error("no fdatasync failed keeping its bytes readable")
	}
}

// memDir is the folder a test keeps a conversation in on a disk.Mem.
const memDir = "/c"

// newMem returns a Mem holding the empty folder memDir.
func newMem(t testing.TB) *disk.Mem {
	t.Helper()
	m := disk.NewMem()
	if err := m.MkdirAll(memDir); err != nil {
		t.Fatal(err)
	}
	return m
}

// openMem opens the conversation in memDir on fsys, folding every fold
// events.
func openMem(t testing.TB, fsys disk.FS, fold int) *Conversation {
	t.Helper()
	c, err := OpenOptions(memDir, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	c.foldEvents = fold
	t.Cleanup(func() { c.Close() })
	return c
}

// firstOp returns the number of the first operation of kind the first
// Append of crashEvent(1) makes on an empty Mem.
func firstOp(t *testing.T, kind disk.Kind) int {
	t.Helper()
	m := newMem(t)
	at := 0
	m.OnOp(func(op disk.Op) {
		if op.Kind == kind && at == 0 {
			at = op.N
		}
	})
	if err := openMem(t, m, crashFold).Append(context.Background(), 1, crashEvent(1)); err != nil {
		t.Fatal(err)
	}
	if at == 0 {
		t.Fatalf("the first append made no %v", kind)
	}
	return at
}

// The first Append makes the new files' names and the folder's own durable
// in one folder sync, the folder and the one it is in: the folder's maker
// left its name to it (durable.MakeDirDeferred).
func TestFirstAppendSyncsFolderName(t *testing.T) {
	m := newMem(t)
	var synced [][]string
	m.OnOp(func(op disk.Op) {
		if op.Kind == disk.OpSyncDir {
			synced = append(synced, op.Dirs)
		}
	})
	if err := openMem(t, m, crashFold).Append(context.Background(), 1, crashEvent(1)); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || fmt.Sprint(synced[0]) != "[/c /]" {
		t.Fatalf("the first Append synced the folders %v, want [[/c /]] in one", synced)
	}
}

// TestFirstFolderSyncFails fails the folder sync of a conversation's first
// Append once. The Append fails; retried, it is acknowledged, and then
// the event must survive a crash: the retry makes the new files' names
// durable, though it finds the thread frame already written.
func TestFirstFolderSyncFails(t *testing.T) {
	at := firstOp(t, disk.OpSyncDir)
	m := newMem(t)
	m.Fail(disk.Plan{At: at, Err: syscall.EIO})
	c := openMem(t, m, crashFold)
	ctx := context.Background()
	if err := c.Append(ctx, 1, crashEvent(1)); err == nil {
		t.Fatal("the folder sync failed, and the append succeeded")
	}
	if m.Faults() != 1 {
		t.Fatalf("%d faults landed, not 1", m.Faults())
	}
	if err := c.Append(ctx, 1, crashEvent(1)); err != nil {
		t.Fatalf("the append again: %v", err)
	}
	after := openMem(t, m.Crash(), crashFold)
	if last, err := after.Last(ctx); err != nil || last != 1 {
		t.Fatalf("after a crash the conversation ends at %d (%v); seq 1 was acknowledged", last, err)
	}
	checkRun(t, after, 1, 1, "after a crash")
}

// syncOps returns the numbers of the operations that are fdatasyncs of
// a file of the name file (of any file if it is "") made by the Appends
// of seqs from before+1 to upto, in a run without faults on a new Mem
// folding every diskFold events.
func syncOps(t *testing.T, before, upto int64, file string) []int {
	t.Helper()
	m := newMem(t)
	c := openMem(t, m, diskFold)
	ctx := context.Background()
	var ops []int
	for seq := int64(1); seq <= upto; seq++ {
		if seq == before+1 {
			m.OnOp(func(op disk.Op) {
				if op.Kind == disk.OpSync && (file == "" || filepath.Base(op.Path) == file) {
					ops = append(ops, op.N)
				}
			})
		}
		if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
	return ops
}

// TestFailedSyncCut: after an fdatasync fails, what it was to make durable
// may still be read though it is not on the disk, and a later fdatasync
// does not put it there. So an Append or a fold whose fdatasync failed
// cuts off what it wrote: a retried Append then writes its line again
// rather than find it there and acknowledge it, and the next fold frames
// the tail's events again rather than find the unit there and empty the
// tail. If the cut fails too, the next writer that goes on from the line,
// the unit or the thread frame writes it again before its fdatasync.
// After a crash every acknowledged event is there.
func TestFailedSyncCut(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		before int64  // events appended first
		file   string // whose next fdatasync fails
		fails  bool   // the next Append fails
	}{
		{"the thread frame", 0, FramesName, true},
		{"a line", 5, TailName, true},
		{"a fold", 3, FramesName, false}, // seq 4's fold fails, after its line is durable
	} {
		for _, every := range []bool{false, true} {
			name := tc.name
			if every {
				// Every operation fails from there until the Append
				// returns, the cut too: the next writer finds the bytes
				// and writes them again.
				name += ", the cut failing too"
			}
			t.Run(name, func(t *testing.T) {
				syncs := syncOps(t, tc.before, tc.before+1, tc.file)
				if len(syncs) == 0 {
					t.Fatalf("%s: append %d makes no fdatasync of %s", name, tc.before+1, tc.file)
				}
				p := newMem(t)
				p.Fail(disk.Plan{At: syncs[0], Every: every, Err: syscall.EIO, Keep: true})
				c := openMem(t, p, diskFold)
				for seq := int64(1); seq <= tc.before; seq++ {
					if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
						t.Fatalf("%s: append %d: %v", name, seq, err)
					}
				}
				seq := tc.before + 1
				err := c.Append(ctx, seq, crashEvent(seq))
				if p.Faults() == 0 {
					t.Fatalf("%s: no fdatasync of %s failed", name, tc.file)
				}
				p.Fail(disk.Plan{})
				if (err != nil) != tc.fails {
					t.Fatalf("%s: append %d after the failed fdatasync: %v", name, seq, err)
				}
				if err != nil {
					if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
						t.Fatalf("%s: append %d again: %v", name, seq, err)
					}
				}
				seq++
				if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
					t.Fatalf("%s: append %d: %v", name, seq, err)
				}
				after := openMem(t, p.Crash(), diskFold)
				if last, err := after.Last(ctx); err != nil || last != seq {
					t.Fatalf("%s: after a crash the conversation ends at %d (%v); seq %d was acknowledged", name, last, err, seq)
				}
				checkRun(t, after, 1, seq, name+", after a crash")
				if err := after.Append(ctx, seq+1, crashEvent(seq+1)); err != nil {
					t.Fatalf("%s: after a crash, append %d: %v", name, seq+1, err)
				}
			})
		}
	}
}

// killed is what dying panics with where its writer dies.
type killed struct{}

// dying is a writer that dies at the nth fdatasync of a file, before it:
// what it wrote stays, readable by the next writer, and is not durable.
func dying(nth int) func(c change) (int, error) {
	return func(c change) (int, error) {
		if c.op == "sync" {
			if nth--; nth == 0 {
				panic(killed{})
			}
		}
		return c.do()
	}
}

// TestDeadWriterUnsynced: a writer dies before the fdatasync of the
// thread frame, or of a fold's unit, that it wrote; the next writer finds
// the frame or the unit and goes on from it: it makes them durable before
// it acknowledges an event that needs them, or empties the tail of the
// events the unit holds. After a crash every acknowledged event is there,
// and the conversation takes the next.
func TestDeadWriterUnsynced(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		before int64 // events appended first; the next Append dies
		nth    int   // the fdatasync of events.zst it dies at
	}{
		{"the thread frame", 0, 1},
		{"a unit", 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMem(t)
			dying := openMem(t, &changeFS{FS: m, picks: named(FramesName), change: dying(tc.nth)}, diskFold)
			seq := int64(1)
			func() {
				defer func() {
					if _, ok := recover().(killed); !ok {
						t.Fatalf("the writer did not die at seq %d", seq)
					}
				}()
				for ; ; seq++ {
					if err := dying.Append(ctx, seq, crashEvent(seq)); err != nil {
						t.Fatalf("append %d: %v", seq, err)
					}
				}
			}()
			if seq != tc.before+1 {
				t.Fatalf("the writer died at seq %d, not %d", seq, tc.before+1)
			}
			// seq's line is there or not, as the writer died before or
			// after it: the next writer goes on from what it finds.
			next := openMem(t, m, diskFold)
			found, err := next.Last(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for seq = found + 1; seq <= found+2; seq++ {
				if err := next.Append(ctx, seq, crashEvent(seq)); err != nil {
					t.Fatalf("the next writer: append %d: %v", seq, err)
				}
			}
			last := seq - 1
			after := openMem(t, m.Crash(), diskFold)
			if got, err := after.Last(ctx); err != nil || got != last {
				t.Fatalf("after a crash the conversation ends at %d (%v); seq %d was acknowledged", got, err, last)
			}
			checkRun(t, after, 1, last, "after a crash")
			if err := after.Append(ctx, last+1, crashEvent(last+1)); err != nil {
				t.Fatalf("after a crash, append %d: %v", last+1, err)
			}
		})
	}
}

// TestFailedSyncEvery fails each fdatasync of a 40-event script folding
// ten times, once, leaving what it was to make durable readable and
// never durable unless written again, as Linux's page cache does
// (disk.Plan.Keep); the Append that meets it is made again. After the
// script, and after a crash, every event is there once and the
// conversation takes the next.
func TestFailedSyncEvery(t *testing.T) {
	const events = 40
	ctx := context.Background()
	run := func(failAt int) (*disk.Mem, error) {
		p := newMem(t)
		p.Fail(disk.Plan{At: failAt, Err: syscall.EIO, Keep: true})
		c, err := OpenOptions(memDir, Options{FS: p})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		c.foldEvents = diskFold
		for seq := int64(1); seq <= events; seq++ {
			if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
				if p.Faults() == 0 {
					return nil, fmt.Errorf("append %d: %w", seq, err)
				}
				if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
					return nil, fmt.Errorf("append %d again: %w", seq, err)
				}
			}
		}
		return p, nil
	}
	syncs := syncOps(t, 0, events, "")
	if len(syncs) < events {
		t.Fatalf("%d fdatasyncs in %d appends", len(syncs), events)
	}
	failed := 0
	for k, at := range syncs {
		k++
		p, err := run(at)
		if err != nil {
			t.Fatalf("fdatasync %d failing: %v", k, err)
		}
		if p.Faults() == 1 {
			failed++
		}
		for _, fsys := range []disk.FS{p, p.Crash()} {
			c := openMem(t, fsys, diskFold)
			where := fmt.Sprintf("fdatasync %d failing", k)
			if fsys != disk.FS(p) {
				where += ", after a crash"
			}
			if last, err := c.Last(ctx); err != nil || last != events {
				t.Fatalf("%s: the conversation ends at %d (%v), not %d", where, last, err, events)
			}
			checkRun(t, c, 1, events, where)
			if err := c.Append(ctx, events+1, crashEvent(events+1)); err != nil {
				t.Fatalf("%s: append %d: %v", where, events+1, err)
			}
		}
	}
	if failed != len(syncs) {
		t.Fatalf("%d of %d fdatasyncs failed", failed, len(syncs))
	}
	t.Logf("each of %d fdatasyncs failed in turn; every event kept", len(syncs))
}

// memRead returns the bytes of name on m, nil if it is missing.
func memRead(t *testing.T, m *disk.Mem, name string) []byte {
	t.Helper()
	b, err := m.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return b
}

// TestRepairCrashImages repairs a conversation of 30 events in 7 units
// and a tail whose third unit has a flipped byte, crashing it at every
// operation of the Repair. On each image the events before the damage
// read whole; each file holds what it held, or what comes before the cut
// while the bytes after it are in the damaged file beside it; and Repair
// run again keeps 8 events and leaves a conversation that takes seq 9.
func TestRepairCrashImages(t *testing.T) {
	ctx := context.Background()
	m := newMem(t)
	c := openMem(t, m, diskFold)
	for seq := int64(1); seq <= 30; seq++ {
		if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
			t.Fatal(err)
		}
	}
	var s snap
	if _, err := c.snapshot(ctx, &s, false); err != nil {
		t.Fatal(err)
	}
	third := s.lastUnit
	for third.first() != 9 {
		var err error
		if third, err = c.unitBefore(&c.fsrc, &s, third); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	f, err := m.OpenFile(filepath.Join(memDir, FramesName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, third.off+third.n/2)
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, third.off+third.n/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	files := map[string]string{FramesName: DamagedFramesName, TailName: DamagedTailName}
	orig := make(map[string][]byte)
	for name := range files {
		orig[name] = memRead(t, m, filepath.Join(memDir, name))
	}
	const kept = 8
	images := 0
	check := func(img *disk.Mem, where string) {
		images++
		for name, damaged := range files {
			now := memRead(t, img, filepath.Join(memDir, name))
			if bytes.Equal(now, orig[name]) {
				continue
			}
			moved := memRead(t, img, filepath.Join(memDir, damaged))
			if !bytes.HasPrefix(orig[name], now) || !bytes.Contains(moved, orig[name][len(now):]) {
				t.Fatalf("%s: %s holds %d bytes, not its %d, and %s does not hold the rest", where, name, len(now), len(orig[name]), damaged)
			}
		}
		c := openMem(t, img, diskFold)
		n := int64(0)
		c.Read(ctx, 1, false, func(seq int64, ev []byte) bool {
			if seq != n+1 || !bytes.Equal(ev, crashEvent(seq)) {
				t.Fatalf("%s: seq %d after %d, or not its bytes", where, seq, n)
			}
			n++
			return true
		})
		if n < kept {
			t.Fatalf("%s: %d events read, %d were whole", where, n, kept)
		}
		if r, err := c.Repair(ctx); err != nil || r.Kept != kept {
			t.Fatalf("%s: Repair again kept %d (%v), not %d", where, r.Kept, err, kept)
		}
		if err := c.Append(ctx, kept+1, crashEvent(kept+1)); err != nil {
			t.Fatalf("%s: append %d after Repair: %v", where, kept+1, err)
		}
	}
	check(m.Crash(), "before Repair")
	m.OnOp(func(op disk.Op) {
		check(m.Crash(), fmt.Sprintf("after operation %d (%v %s)", op.N, op.Kind, op.Path))
	})
	r, err := openMem(t, m, diskFold).Repair(ctx)
	m.OnOp(nil)
	if err != nil || r.Kept != kept || len(r.Cuts) != 2 {
		t.Fatalf("Repair kept %d with cuts %+v (%v), not %d with two cuts", r.Kept, r.Cuts, err, kept)
	}
	check(m.Crash(), "after Repair")
	t.Logf("%d crash images of a Repair that cut %+v", images, r.Cuts)
}
