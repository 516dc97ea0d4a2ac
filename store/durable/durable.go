package durable

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if durable {
		return SyncDir(dir)
	}
	return nil
}

// MakeDir makes the folder dir, and its parents that are missing, and
// makes each name it made durable by syncing the folder it was made in, as
// a file's name needs its folder synced: without, a machine's crash may
// lose a conversation's folder whose events were synced. A folder that is
// there costs a stat. made says whether dir was made now.
func MakeDir(dir string) (made bool, err error) {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return false, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return false, nil
	}
	err = os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err = MakeDir(filepath.Dir(dir)); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
	}
	switch {
	case err == nil:
		made = true
	case errors.Is(err, fs.ErrExist): // made by another meanwhile, its name maybe not yet synced
	default:
		return false, err
	}
	return made, SyncDir(filepath.Dir(dir))
}

// SyncDir makes the names in the folder dir durable: a file created,
// renamed or removed in it survives a crash only once SyncDir has returned.
// Its errors are *fs.PathError, naming the folder.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
