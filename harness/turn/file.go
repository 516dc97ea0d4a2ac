package turn

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openFile is os.OpenFile for a regular file a turn opens each time (the
// id index, the copy for people) less four system calls: os.OpenFile
// offers every file to the runtime's poller, which a regular file refuses
// (two fcntl to make it non-blocking, an epoll_ctl refused, two fcntl to
// make it blocking again); os.NewFile asks once whether the file is
// non-blocking and leaves it out of the poller. The file reads and writes
// as it would from os.OpenFile, blocking its thread.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// openFD opens a regular file as a bare descriptor, for the files a turn
// reads and writes at known offsets (the told file, the id index kept
// between turns): no os.File, so no fcntl to ask whether it blocks, and
// each read is one pread.
func openFD(path string, flag int, perm os.FileMode) (int, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// pread reads into b from off once: a regular file's read is short only
// at its end.
func pread(fd int, b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, b, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// pwrite writes b at off, all of it.
func pwrite(fd int, b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Pwrite(fd, b[done:], off+int64(done))
		if err == unix.EINTR {
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
