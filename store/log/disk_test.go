package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/internal/disk/disktest"
)

func openOn(fsys disk.FS, dir string) (store.Conversation, error) {
	return OpenOptions(dir, Options{FS: fsys})
}

// TestCrashImages crashes the log at every write, sync, truncate and
// folder sync of a 100-event script.
func TestCrashImages(t *testing.T) { disktest.Crash(t, openOn) }

// TestCrashImagesNoSyncDir shows the crash images catch a log whose new
// file's name was never made durable.
func TestCrashImagesNoSyncDir(t *testing.T) {
	r := disktest.CrashImages(t, openOn, disktest.Options{SkipSyncDir: true})
	if len(r.Violations) == 0 {
		t.Fatal("with SyncDir doing nothing no crash image lost an acknowledged event")
	}
	t.Logf("first violation: %s", r.Violations[0])
}

// TestFaults fails every operation of a 100-event script, once and from
// then on, with EIO and ENOSPC.
func TestFaults(t *testing.T) { disktest.Faults(t, openOn) }

// The first Append makes the new file's name and the folder's own durable
// in one folder sync, the folder and the one it is in, before its line is
// written: the folder's maker left its name to it (durable.MakeDirDeferred).
// The next Append syncs no folder.
func TestFirstAppendSyncsFolderName(t *testing.T) {
	ctx := context.Background()
	m := disk.NewMem()
	m.MkdirAll("/chats/t")
	var ops []disk.Op
	m.OnOp(func(op disk.Op) { ops = append(ops, op) })
	c, _ := openOn(m, "/chats/t")
	if err := c.Append(ctx, 1, makeEvent(1, 5)); err != nil {
		t.Fatal(err)
	}
	var synced [][]string
	wrote := false
	for _, op := range ops {
		switch op.Kind {
		case disk.OpSyncDir:
			if wrote {
				t.Errorf("the folder synced after the first line was written")
			}
			synced = append(synced, op.Dirs)
		case disk.OpWrite:
			wrote = true
		}
	}
	if len(synced) != 1 || fmt.Sprint(synced[0]) != "[/chats/t /chats]" {
		t.Fatalf("the first Append synced the folders %v, want [[/chats/t /chats]] in one", synced)
	}
	ops = nil
	if err := c.Append(ctx, 2, makeEvent(2, 5)); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Kind == disk.OpSyncDir {
			t.Errorf("the second Append synced %v", op.Dirs)
		}
	}
}

// TestAppendAfterFailedFolderSync: an Append whose folder sync failed,
// made again (by the same Conversation or another) once the disk is well,
// leaves its line under a durable name before it returns nil: a crash
// then keeps it.
func TestAppendAfterFailedFolderSync(t *testing.T) {
	ctx := context.Background()
	dir := "/chats/t"
	// Where the first Append syncs the folder.
	m := disk.NewMem()
	m.MkdirAll(dir)
	at := 0
	m.OnOp(func(op disk.Op) {
		if op.Kind == disk.OpSyncDir && at == 0 {
			at = op.N
		}
	})
	c, _ := openOn(m, dir)
	if err := c.Append(ctx, 1, makeEvent(1, 5)); err != nil || at == 0 {
		t.Fatalf("append: %v, folder synced at operation %d", err, at)
	}
	for _, again := range []string{"the same conversation", "another conversation"} {
		m := disk.NewMem()
		m.MkdirAll(dir)
		m.Fail(disk.Plan{At: at, Err: syscall.EIO})
		a, _ := openOn(m, dir)
		if err := a.Append(ctx, 1, makeEvent(1, 5)); !errors.Is(err, syscall.EIO) {
			t.Fatalf("append with the folder sync failing: %v, want EIO", err)
		}
		b := a
		if again == "another conversation" {
			b, _ = openOn(m, dir)
		}
		if err := b.Append(ctx, 1, makeEvent(1, 5)); err != nil {
			t.Fatalf("append again by %s: %v", again, err)
		}
		c, _ := openOn(m.Crash(), dir)
		if last, err := c.Last(ctx); last != 1 || err != nil {
			t.Errorf("append made again by %s after its folder sync failed: after a crash the last is %d (%v), want 1", again, last, err)
		}
	}
}

// TestAppendIntoEmptyLog: a log left empty by a writer that died before it
// synced the folder gets its name made durable by the next Append.
func TestAppendIntoEmptyLog(t *testing.T) {
	ctx := context.Background()
	m := disk.NewMem()
	m.MkdirAll("/t")
	f, err := m.OpenFile("/t/"+FileName, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, _ := openOn(m, "/t")
	if err := c.Append(ctx, 1, makeEvent(1, 5)); err != nil {
		t.Fatal(err)
	}
	img, _ := openOn(m.Crash(), "/t")
	if last, err := img.Last(ctx); last != 1 || err != nil {
		t.Errorf("after a crash the last is %d (%v), want 1", last, err)
	}
}

// lying is a store that says every Append succeeded.
type lying struct{ store.Conversation }

func (l lying) Append(ctx context.Context, seq int64, event []byte) error {
	l.Conversation.Append(ctx, seq, event)
	return nil
}

// TestFaultsCatchLies shows the fault loop catches a store that
// acknowledges an Append that failed.
func TestFaultsCatchLies(t *testing.T) {
	r := disktest.FaultLoop(t, func(fsys disk.FS, dir string) (store.Conversation, error) {
		c, err := openOn(fsys, dir)
		return lying{c}, err
	}, disktest.Options{Events: 20})
	if len(r.Violations) == 0 {
		t.Fatal("a store that acknowledges failed appends passed the fault loop")
	}
	t.Logf("%d violations; the first: %s", len(r.Violations), r.Violations[0])
}

// TestFailedSyncKept fails each fdatasync of a 12-event script, once and
// from then on, the failed fdatasync leaving the line readable though it
// is not on the disk, and never putting it there later, as Linux's page
// cache does (disk.Plan.Keep). The Append fails and cuts its line off, so
// the log ends as it did; once the disk is well the Append made again is
// acknowledged, and after the script a crash keeps every event, whether
// the cut went through or failed too.
func TestFailedSyncKept(t *testing.T) {
	const events = 12
	ctx := context.Background()
	const dir = "/chats/t"
	m := disk.NewMem()
	m.MkdirAll(dir)
	var syncs []int
	m.OnOp(func(op disk.Op) {
		if op.Kind == disk.OpSync {
			syncs = append(syncs, op.N)
		}
	})
	c, _ := openOn(m, dir)
	for seq := int64(1); seq <= events; seq++ {
		if err := c.Append(ctx, seq, makeEvent(seq, 100)); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range syncs {
		for _, every := range []bool{false, true} {
			where := fmt.Sprintf("operation %d (sync) failing once", at)
			if every {
				where = fmt.Sprintf("operation %d (sync) failing from then on", at)
			}
			m := disk.NewMem()
			m.MkdirAll(dir)
			m.Fail(disk.Plan{At: at, Every: every, Err: syscall.EIO, Keep: true})
			c, _ := openOn(m, dir)
			failed := int64(0)
			for seq := int64(1); seq <= events; seq++ {
				err := c.Append(ctx, seq, makeEvent(seq, 100))
				if err == nil {
					continue
				}
				if failed != 0 || !errors.Is(err, syscall.EIO) {
					t.Fatalf("%s: append %d: %v", where, seq, err)
				}
				failed = seq
				if last, err := c.Last(ctx); !every && (err != nil || last != seq-1) {
					t.Errorf("%s: after append %d failed the log ends at %d (%v), not %d", where, seq, last, err, seq-1)
				}
				m.Fail(disk.Plan{})
				if err := c.Append(ctx, seq, makeEvent(seq, 100)); err != nil {
					t.Fatalf("%s: append %d again: %v", where, seq, err)
				}
			}
			c.Close()
			if failed == 0 {
				t.Fatalf("%s: no append failed", where)
			}
			img, _ := openOn(m.Crash(), dir)
			n := int64(0)
			err := img.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
				if seq != n+1 || !bytes.Equal(ev, makeEvent(seq, 100)) {
					t.Errorf("%s: after a crash seq %d follows %d, or holds other bytes", where, seq, n)
					return false
				}
				n++
				return true
			})
			if err != nil || n != events {
				t.Errorf("%s, append %d failing: after a crash the log holds %d events (%v), %d were acknowledged", where, failed, n, err, events)
			}
			if err := img.Append(ctx, events+1, makeEvent(events+1, 100)); err != nil {
				t.Errorf("%s: after a crash, append %d: %v", where, events+1, err)
			}
			img.Close()
		}
	}
	t.Logf("each of %d fdatasyncs failed in turn, once and from then on", len(syncs))
}

// TestReadMeetsCut: a forward Read that found the end past a line whose
// fdatasync then fails, and meets the cut that takes the line off, ends
// there with the lines that were whole, and reports no damage.
func TestReadMeetsCut(t *testing.T) {
	const events = 100 // about 100 KiB: a forward read takes several chunks
	ctx := context.Background()
	const dir = "/chats/t"
	m := disk.NewMem()
	m.MkdirAll(dir)
	w, _ := openOn(m, dir)
	for seq := int64(1); seq <= events; seq++ {
		if err := w.Append(ctx, seq, makeEvent(seq, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// The next Append's fdatasync fails; while it is failing, before the
	// cut, a reader finds the end and reads the first line, then waits
	// for the cut before it reads on.
	read, cut := make(chan error, 1), make(chan struct{})
	var got int64
	m.OnOp(func(op disk.Op) {
		switch {
		case op.Kind == disk.OpSync && op.Fault:
			first := make(chan struct{})
			go func() {
				r, _ := openOn(m, dir)
				defer r.Close()
				read <- r.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
					if seq == 1 {
						close(first)
						<-cut
					}
					got = seq
					return true
				})
			}()
			<-first
		case op.Kind == disk.OpTruncate:
			close(cut)
		}
	})
	m.Fail(disk.Plan{At: m.Ops() + 2, Err: syscall.EIO, Keep: true}) // its write, then its fdatasync
	if err := w.Append(ctx, events+1, makeEvent(events+1, 1000)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the append whose fdatasync fails: %v", err)
	}
	select {
	case <-cut:
	default:
		t.Error("the append whose fdatasync failed did not cut its line off")
		close(cut)
	}
	if err := <-read; err != nil {
		t.Fatalf("the read that met the cut: %v", err)
	}
	if got < 1 || got > events {
		t.Errorf("the read that met the cut handed out seqs 1 to %d, want 1 to at most %d", got, events)
	}
	w.Close()
}
