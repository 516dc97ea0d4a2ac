package compact

import (
	"context"
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
// folder sync included. Built with -race, or with -short, the script is
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
		if r.Faults[k] == 0 {
			t.Errorf("no fault landed on a %v", k)
		}
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
