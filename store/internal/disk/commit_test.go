package disk_test

import (
	"errors"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"lnk.dev/linkharness/store/durable"
	"lnk.dev/linkharness/store/internal/disk"
)

// TestCommitterGroupSyncFailed: a syncfs that fails fails every file of
// its batch, and a file written before it and synced after by an
// fdatasync that succeeds, whose bytes it took (Linux marks them clean);
// a file written after it is not failed, nor one whose sync ended before
// it.
func TestCommitterGroupSyncFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := disk.NewMem()
		if err := m.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
		files := map[string]disk.File{}
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			f, err := m.OpenFile("/d/"+name, 2|64 /* O_RDWR|O_CREATE */, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			files[name] = f
		}
		if err := m.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		c := m.Committer()
		mark := c.Mark()
		for _, name := range []string{"a", "b", "c", "d"} {
			if _, err := files[name].WriteAt([]byte(name+" line\n"), 0); err != nil {
				t.Fatal(err)
			}
		}
		first, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		m.OnOp(func(op disk.Op) {
			if op.Kind == disk.OpSync {
				once.Do(func() { close(first); <-release })
			}
		})
		errs := map[string]error{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		commit := func(name string) {
			err := c.Commit(files[name], mark)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}
		wg.Go(func() { commit("a") }) // alone: its fdatasync, held
		<-first
		wg.Go(func() { commit("b") })
		wg.Go(func() { commit("c") })
		synctest.Wait() // b and c wait for a's sync: they share the next, a syncfs
		m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.EIO, Keep: true})
		close(release)
		wg.Wait()

		if errs["a"] != nil {
			t.Errorf("a, synced before the syncfs failed: %v", errs["a"])
		}
		for _, name := range []string{"b", "c"} {
			if !errors.Is(errs[name], syscall.EIO) {
				t.Errorf("%s, in the failed syncfs's batch: %v, want EIO", name, errs[name])
			}
		}
		// d was written before the syncfs failed: its own fdatasync
		// succeeds, and its bytes are not on the disk.
		if err := c.Commit(files["d"], mark); !errors.Is(err, durable.ErrGroupSync) {
			t.Errorf("d, written before the syncfs failed and synced after: %v, want ErrGroupSync", err)
		}
		if b := read(t, m.Crash(), "/d/d"); string(b) == "d line\n" {
			t.Errorf("d holds %q after a crash; the test means its bytes were lost", b)
		}
		// e is written after: nothing of it was lost.
		after := c.Mark()
		if _, err := files["e"].WriteAt([]byte("e line\n"), 0); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(files["e"], after); err != nil {
			t.Errorf("e, written after the syncfs failed: %v", err)
		}
		if b := read(t, m.Crash(), "/d/e"); string(b) != "e line\n" {
			t.Errorf("e holds %q after a crash", b)
		}
		st := c.Stats()
		if st.Commits != 5 || st.Syncs != 4 || st.Failed != 1 {
			t.Errorf("stats %+v; want 5 commits, 4 syncs (a, b and c's syncfs, d, e), 1 failed", st)
		}
	})
}

// read returns the bytes of name on m.
func read(t *testing.T, m *disk.Mem, name string) []byte {
	t.Helper()
	b, err := m.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
