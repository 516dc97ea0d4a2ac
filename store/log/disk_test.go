package log

import (
	"context"
	"errors"
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
