package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Folders on one filesystem are synced together by one syncfs, through an
// open folder's descriptor; a folder whose filesystem cannot be asked is
// synced alone.
func TestFoldersShareOneSync(t *testing.T) {
	root := t.TempDir()
	var synced []Syncer
	for _, name := range []string{"a", "b", "c"} {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		synced = append(synced, openFolders(t, dir))
	}
	var c Committer
	errs, calls, failed := c.sync(synced)
	if calls != 1 || failed != 0 || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("three folders on one filesystem: %d calls, %d failed, %v; want one syncfs", calls, failed, errs)
	}

	closed := &folders{fd: []int{-1}, name: []string{root}} // no descriptor: EBADF
	errs, calls, _ = c.sync(append(synced[:1:1], closed))
	if calls != 2 || errs[0] != nil || errs[1] == nil {
		t.Fatalf("a folder whose device cannot be asked: %d calls, %v; want each synced alone, the closed one failing", calls, errs)
	}
}

// SyncDir names the folder when it fails: one missing, or one whose sync
// a failed syncfs since its mark may have undone (ErrGroupSync).
func TestSyncDirFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	var pe *fs.PathError
	if err := SyncDir(missing); !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing folder: %v, want a PathError naming it", err)
	}

	dir := t.TempDir()
	mark := osCommitter.Mark()
	osCommitter.mu.Lock()
	osCommitter.failed++ // as a batch's syncfs that failed since mark
	osCommitter.mu.Unlock()
	err := syncDirs([]string{dir}, mark)
	if !errors.Is(err, ErrGroupSync) || !errors.As(err, &pe) || pe.Path != dir {
		t.Fatalf("syncDirs after a failed syncfs: %v, want ErrGroupSync naming %s", err, dir)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatalf("SyncDir with a mark taken after: %v", err)
	}
}

// Folders on two filesystems are not one Committer's member: a closed one,
// whose filesystem cannot be asked, stands for the other.
func TestFoldersOneDevice(t *testing.T) {
	f := openFolders(t, t.TempDir(), t.TempDir())
	if !f.oneDevice() || !f.got {
		t.Fatal("two folders of one filesystem: not one device")
	}
	if f := (folders{fd: []int{f.fd[0], -1}, name: f.name}); f.oneDevice() {
		t.Fatal("a folder whose filesystem cannot be asked taken for one device with another")
	}
}

// openFolders opens dirs as syncDirs does, closed when t ends.
func openFolders(t *testing.T, dirs ...string) *folders {
	t.Helper()
	f := &folders{name: dirs}
	t.Cleanup(f.close)
	for _, dir := range dirs {
		fd, err := openDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		f.fd = append(f.fd, fd)
	}
	return f
}
