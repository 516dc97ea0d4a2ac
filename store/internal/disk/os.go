package disk

import (
	"context"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store/internal/flock"
)

// OS is the real filesystem.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	// Fd is taken once: a regular file is never in the poller, so this
	// changes nothing about how f works, and f keeps the descriptor alive.
	return &osFile{File: f, fd: int(f.Fd())}, nil
}

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

type osFile struct {
	*os.File
	fd int
}

func (f *osFile) Sync() error {
	for {
		if err := unix.Fdatasync(f.fd); err != unix.EINTR {
			return err
		}
	}
}

func (f *osFile) Stat() (Info, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(f.fd, &st)
		if err == nil {
			return Info{Size: st.Size, Changed: st.Ctim.Nano()}, nil
		}
		if err != unix.EINTR {
			return Info{}, fmt.Errorf("stat %s: %w", f.Name(), err)
		}
	}
}

func (f *osFile) Lock(ctx context.Context, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	return flock.Lock(ctx, f.fd, how)
}

func (f *osFile) Unlock() { flock.Unlock(f.fd) }
