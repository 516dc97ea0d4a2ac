package osfile

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// Open is os.OpenFile for a file that is not a pipe, socket or terminal:
// the same file, opened close-on-exec, with four fewer system calls (see
// the package's doc). Its errors are *fs.PathError, as os's.
func Open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := open(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ReadFile is os.ReadFile in four system calls, for a file of at most most
// bytes: a longer one is read as its first most+1 bytes, so the caller can
// tell it is over.
func ReadFile(name string, most int) ([]byte, error) {
	fd, err := open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	// One byte past the size, so that a read filling less than it asked
	// is the end of the file (a regular file's read is short only there),
	// and one filling it all says the file grew since the fstat.
	b := make([]byte, 0, min(most, int(st.Size))+1)
	for {
		n, err := Read(fd, b[len(b):cap(b)])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		b = b[:len(b)+n]
		if n == 0 || len(b) < cap(b) || len(b) > most {
			return b, nil
		}
		b = slices.Grow(b, min(most+1-len(b), max(len(b), 512)))
	}
}

// OpenFD opens a regular file as a bare descriptor, for a file read and
// written at known offsets (a turn's told record, its copy for people):
// no os.File, so no fcntl to ask whether it blocks, and each read is one
// pread. Its errors are *fs.PathError.
func OpenFD(name string, flag int, perm fs.FileMode) (int, error) {
	return open(name, flag, perm)
}

// Pread reads into b from off once: a regular file's read is short only
// at its end.
func Pread(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pread(fd, b, off)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// Pwrite writes b at off, all of it.
func Pwrite(fd int, b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := syscall.Pwrite(fd, b[done:], off+int64(done))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, io.ErrShortWrite
		}
		done += n
	}
	return done, nil
}

func open(name string, flag int, perm fs.FileMode) (int, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstat(fd, st); err != syscall.EINTR {
			return err
		}
	}
}

// Read reads into b once from fd, again at once when a signal came first:
// a descriptor outside Go's poller (a file kept open), or one read inside
// a syscall.RawConn's Read, where a read given up on EINTR would wait for
// the poller to say readable again, which it may never.
func Read(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}
