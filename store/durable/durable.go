package durable

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// WriteFileAtomic writes b to path through a temporary file beside it,
// synced and renamed into place, then syncs the folder: whole or not at all.
func WriteFileAtomic(path string, b []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteAtomic is WriteFileAtomic for content written as it is made, so a
// large file never has to be held in memory whole.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return replace(path, perm, write, true)
}

// ReplaceFile writes b to path through a temporary file beside it,
// renamed into place, and syncs neither: a reader finds the old file or the
// new one whole, but a machine's crash may leave either, or one empty. It
// is for files the harness makes again when they are missing or damaged
// (tool-lists.json), which a new agent's first turn otherwise paid two
// syncs for.
func ReplaceFile(path string, b []byte, perm os.FileMode) error {
	return replace(path, perm, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}, false)
}

// replace writes path's new content through a temporary file beside it,
// renamed into place; durable, the file is synced before and its folder
// after.
func replace(path string, perm os.FileMode, write func(io.Writer) error, durable bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && perm != 0o600 { // CreateTemp's
		err = f.Chmod(perm)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	mark := osCommitter.Mark()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if durable {
		return syncDirs([]string{dir}, mark)
	}
	return nil
}

// MakeDirDeferred makes the folder dir, and its parents that are missing,
// and makes the names of the parents it made durable by syncing the
// folders they were made in, in one wait for the Committer, as a file's
// name needs its folder synced; dir's own name it leaves to dir's first
// writer, who syncs dir and the folder it is in at once, with SyncDir,
// before its first byte that matters is written: the stores that keep a
// conversation in files do with its first event, so a new conversation
// beside others waits for one folder sync, not two in turn. A folder that
// is there costs a stat. made says whether dir was made now.
func MakeDirDeferred(dir string) (made bool, err error) {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return false, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return false, nil
	}
	mark := osCommitter.Mark()
	made, in, err := makeDirs(dir, nil)
	if err != nil || len(in) == 1 {
		return made, err
	}
	return made, syncDirs(in[:len(in)-1], mark) // all but the folder dir is in
}

// makeDirs makes dir and its missing parents, none synced, and appends to
// in the folder each was made in, outermost first: those whose names are
// to be made durable. A folder made by another meanwhile counts as made
// here, its name maybe not yet synced.
func makeDirs(dir string, in []string) (made bool, _ []string, err error) {
	err = os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		if _, in, err = makeDirs(filepath.Dir(dir), in); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	switch {
	case err == nil:
		made = true
	case errors.Is(err, fs.ErrExist):
	default:
		return false, in, err
	}
	return made, append(in, filepath.Dir(dir)), nil
}

// SyncDir makes the names in the folders dirs durable: a file or folder
// created, renamed or removed in one survives a crash only once SyncDir
// has returned. It syncs through the process's Committer (OS), so the
// folders and files of writers that sync at once share one syncfs, and
// several folders on one filesystem wait once. Its errors are
// *fs.PathError, naming a folder.
func SyncDir(dirs ...string) error {
	return syncDirs(dirs, osCommitter.Mark())
}

// syncDirs is SyncDir with the Committer's mark taken before the names
// were made: of several folders in one Commit when they are on one
// filesystem, else of each in turn. A name needs no earlier mark for
// itself: a filesystem whose journal failed to commit fails every sync
// after, and a file's lost write, which Linux reports once, does not take
// a name with it.
func syncDirs(dirs []string, mark uint64) error {
	if len(dirs) == 0 {
		return nil
	}
	f := folders{fd: make([]int, 0, len(dirs)), name: dirs}
	defer f.close()
	for _, dir := range dirs {
		fd, err := openDir(dir)
		if err != nil {
			return err
		}
		f.fd = append(f.fd, fd)
	}
	if len(dirs) == 1 || f.oneDevice() {
		return commit(&f, dirs[0], mark)
	}
	for i := range f.fd {
		if err := commit(&folders{fd: f.fd[i : i+1], name: dirs[i : i+1]}, dirs[i], mark); err != nil {
			return err
		}
	}
	return nil
}

// openDir opens the folder dir to sync it: a bare descriptor, since an
// *os.File of a folder tries the runtime's poller first, four calls more
// than the open.
func openDir(dir string) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// commit syncs f through the process's Committer, its error naming a
// folder: its own sync's does, and a batch's syncfs's or ErrGroupSync is
// given dir's name.
func commit(f *folders, dir string, mark uint64) error {
	err := osCommitter.Commit(f, mark)
	if pe := (*fs.PathError)(nil); err != nil && !errors.As(err, &pe) {
		err = &fs.PathError{Op: "sync", Path: dir, Err: err}
	}
	return err
}

// osCommitter is the real filesystem's group commit: the process's.
var osCommitter Committer

// OS returns the real filesystem's Committer, the one the process's
// writers share: the stores' logs and every folder synced here.
func OS() *Committer { return &osCommitter }

// folders are open folders as a Committer syncs them: several only when
// they are on one filesystem (oneDevice).
type folders struct {
	fd   []int
	name []string // each one's, for its errors
	dev  uint64
	got  bool // dev is known
}

// Sync syncs each folder, and returns the first error, naming its folder.
func (d *folders) Sync() error {
	for i, fd := range d.fd {
		if err := ignoringEINTR(func() error { return unix.Fsync(fd) }); err != nil {
			return &fs.PathError{Op: "sync", Path: d.name[i], Err: err}
		}
	}
	return nil
}

// SyncFS returns syncfs's error as it is: a batch's members share it,
// each naming its own.
func (d *folders) SyncFS() error {
	return ignoringEINTR(func() error { return unix.Syncfs(d.fd[0]) })
}

// Device is the folders' filesystem, asked once; a folder that cannot be
// asked is on a filesystem of its own, 0 never being a device's number
// here, so it is synced alone.
func (d *folders) Device() uint64 {
	if !d.got {
		d.got = true
		d.dev, _ = device(d.fd[0])
	}
	return d.dev
}

// oneDevice says whether the folders are on one filesystem, so that one
// syncfs makes all their names durable, and knows its Device if so.
func (d *folders) oneDevice() bool {
	for i, fd := range d.fd {
		dev, ok := device(fd)
		if !ok || i > 0 && dev != d.dev {
			return false
		}
		d.dev = dev
	}
	d.got = true
	return true
}

func (d *folders) close() {
	for _, fd := range d.fd {
		unix.Close(fd)
	}
}

// device is the filesystem of the file open as fd.
func device(fd int) (uint64, bool) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return 0, false
	}
	return st.Dev, true
}

// ignoringEINTR calls f again while a signal interrupts it, as package
// os does for its own calls.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
