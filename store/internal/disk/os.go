package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store/durable"
	"lnk.dev/linkharness/store/internal/flock"
)

// OS is the real filesystem. Its files are bare descriptors, not
// *os.File: a regular file never goes in Go's poller, and an os.File
// asks the kernel to put it there (and back out) at every open, four
// fcntl calls and a failing epoll_ctl that a log opened once per turn
// pays each time.
var OS FS = &osFS{}

// osFS is the real filesystem; its Committer is the process's
// (durable.OS), which the folders durable syncs share.
type osFS struct{}

func (o *osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &osFile{name: name, fd: fd, dev: -1, append: flag&os.O_APPEND != 0}, nil
}

func (*osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (*osFS) SyncDir(dirs ...string) error { return durable.SyncDir(dirs...) }

func (*osFS) Committer() *durable.Committer { return durable.OS() }

// osFile is an open file of the real filesystem: a descriptor. It is for
// one goroutine at a time, as File says.
type osFile struct {
	name string
	fd   int

	append bool // opened with os.O_APPEND
	closed bool

	once sync.Once
	dev  int64 // the device it is on, once Device asked; -1 before
}

// errClosed is the error of a call on a closed file, as os.File's.
func (f *osFile) errClosed(op string) error {
	return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
}

func (f *osFile) Name() string { return f.name }

func (f *osFile) ReadAt(b []byte, off int64) (int, error) {
	if f.closed {
		return 0, f.errClosed("read")
	}
	n, err := f.whole(pread, b, off)
	if err == errNothing {
		err = io.EOF
	}
	return n, err
}

func (f *osFile) WriteAt(b []byte, off int64) (int, error) {
	if f.closed {
		return 0, f.errClosed("write")
	}
	if f.append {
		// As os.File.WriteAt says.
		return 0, errors.New("os: invalid use of WriteAt on file opened with O_APPEND")
	}
	return f.written(f.whole(pwrite, b, off))
}

func (f *osFile) Write(b []byte) (int, error) {
	if f.closed {
		return 0, f.errClosed("write")
	}
	return f.written(f.whole(write, b, 0))
}

// The calls whole makes: pread(2) and pwrite(2) at an offset, write(2) at
// the end of a file opened with os.O_APPEND.
const (
	pread = iota
	pwrite
	write
)

// errNothing is whole's error when a call moved no byte: for a read, the
// end of the file.
var errNothing = errors.New("disk: a call moved no byte")

// whole makes the call of kind on the rest of b, at off and on (write
// ignores off), until all of b is moved: a call a signal cut short is
// made again, an error the call returns is the read's or write's
// *fs.PathError, and a call that moves nothing stops it with errNothing.
func (f *osFile) whole(kind int, b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		var n int
		var err error
		switch kind {
		case pread:
			n, err = unix.Pread(f.fd, b[done:], off+int64(done))
		case pwrite:
			n, err = unix.Pwrite(f.fd, b[done:], off+int64(done))
		default:
			n, err = unix.Write(f.fd, b[done:])
		}
		switch {
		case err == unix.EINTR:
			continue
		case err != nil && kind == pread:
			return done, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case err != nil:
			return done, &fs.PathError{Op: "write", Path: f.name, Err: err}
		case n == 0:
			return done, errNothing
		}
		done += n
	}
	return done, nil
}

// written is a write's result, a call that wrote nothing
// io.ErrShortWrite.
func (f *osFile) written(n int, err error) (int, error) {
	if err == errNothing {
		err = &fs.PathError{Op: "write", Path: f.name, Err: io.ErrShortWrite}
	}
	return n, err
}

func (f *osFile) Truncate(size int64) error {
	if f.closed {
		return f.errClosed("truncate")
	}
	if err := ignoringEINTR(func() error { return unix.Ftruncate(f.fd, size) }); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) Sync() error {
	if f.closed {
		return f.errClosed("sync")
	}
	return ignoringEINTR(func() error { return unix.Fdatasync(f.fd) })
}

func (f *osFile) SyncFS() error {
	if f.closed {
		return f.errClosed("syncfs")
	}
	return ignoringEINTR(func() error { return unix.Syncfs(f.fd) })
}

// ignoringEINTR calls f again while a signal interrupts it (EINTR), as
// package os does, and returns what it returns then.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

func (f *osFile) Device() uint64 {
	f.once.Do(func() {
		var st unix.Stat_t
		for {
			err := unix.Fstat(f.fd, &st)
			if err == nil {
				f.dev = int64(st.Dev)
				return
			}
			if err != unix.EINTR {
				return // -1: a device of its own, synced alone
			}
		}
	})
	if f.dev < 0 {
		return uint64(f.fd) | 1<<63
	}
	return uint64(f.dev)
}

func (f *osFile) Stat() (Info, error) {
	if f.closed {
		return Info{}, f.errClosed("stat")
	}
	var st unix.Stat_t
	for {
		err := unix.Fstat(f.fd, &st)
		if err == nil {
			return Info{Size: st.Size, Changed: st.Ctim.Nano()}, nil
		}
		if err != unix.EINTR {
			return Info{}, fmt.Errorf("stat %s: %w", f.name, err)
		}
	}
}

func (f *osFile) Lock(ctx context.Context, exclusive bool) error {
	if f.closed {
		return f.errClosed("flock")
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	return flock.Lock(ctx, f.fd, how)
}

func (f *osFile) Unlock() {
	if !f.closed {
		flock.Unlock(f.fd)
	}
}

func (f *osFile) Close() error {
	if f.closed {
		return f.errClosed("close")
	}
	f.closed = true
	// close is not retried on EINTR: on Linux the descriptor is gone.
	if err := unix.Close(f.fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
