package pebble

import (
	"io"
	"os"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// privateFS is the disk as pebble's own, but every file and folder it
// makes is its owner's alone (0600 and 0700): pebble makes them 0666 and
// 0755, readable by every user of the machine where the umask allows.
// Each file is made with pebble's mode and then given 0600 before pebble
// writes to it, inside a folder that is 0700 already.
type privateFS struct{ vfs.FS }

func (fs privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return private(fs.FS.Create(name, category))
}

func (fs privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return private(fs.FS.OpenReadWrite(name, category, opts...))
}

func (fs privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return private(fs.FS.ReuseForWrite(oldname, newname, category))
}

func (fs privateFS) MkdirAll(dir string, _ os.FileMode) error { return fs.FS.MkdirAll(dir, 0o700) }

func (fs privateFS) Lock(name string) (io.Closer, error) {
	c, err := fs.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(name, 0o600); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (fs privateFS) Unwrap() vfs.FS { return fs.FS }

// private gives the file f its owner's mode alone.
func private(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if err := syscall.Fchmod(int(f.Fd()), 0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
