package log

import (
	"context"
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

// TestAppendNamesFile: an Append to a log whose creator never synced the
// folder (it died first, or its folder sync failed) makes the log's name
// durable before it returns, whether it writes the next seq or finds its
// bytes already there; else a crash loses acknowledged events with the
// file.
func TestAppendNamesFile(t *testing.T) {
	for _, next := range []bool{false, true} {
		m := disk.NewMem()
		dir := "/chats/t"
		if err := m.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		m.SkipSyncDir(true)
		a, _ := openOn(m, dir)
		if err := a.Append(context.Background(), 1, makeEvent(1, 5)); err != nil {
			t.Fatal(err)
		}
		a.Close()
		m.SkipSyncDir(false)

		b, _ := openOn(m, dir)
		want := int64(1)
		if next {
			want = 2
		}
		if err := b.Append(context.Background(), want, makeEvent(want, 5)); err != nil {
			t.Fatal(err)
		}
		b.Close()
		c, _ := openOn(m.Crash(), dir)
		if last, err := c.Last(context.Background()); last != want || err != nil {
			t.Errorf("appending seq %d to a log whose name was not durable: after a crash the last is %d (%v)", want, last, err)
		}
	}
}
