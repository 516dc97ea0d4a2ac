package turn

import (
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
