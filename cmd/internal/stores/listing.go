package stores

import (
	"errors"
	"io/fs"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A turn opens its conversation's folder, and the folder's names say how
// the conversation is kept; they change only when a conversation starts,
// is converted or gets a marker. So an Opener keeps each folder's names
// with the folder's identity and times, and reads the names again only
// when one stat says the folder changed: one system call for the nine of
// opening, listing and closing it.

// settled is how long after a folder's last change its names may be kept.
// A folder's times come from the kernel's coarse clock, a tick (at most 10
// ms) behind; a change within that tick of the listing could leave the
// times as they were. Past settled, any change gives the folder later
// times than those kept, so a folder whose times are the same holds the
// same names.
const settled = 100 * time.Millisecond

// maxListings bounds the folders an Opener keeps names of; past it, all
// are let go and kept again as they are read.
const maxListings = 4096

// listing is a folder's names, as look read them, and the folder then.
type listing struct {
	f   folder
	key folderKey
}

// folderKey is what says a folder is the one it was, unchanged: the same
// inode, the same times to the nanosecond.
type folderKey struct {
	dev, ino     uint64
	mtime, ctime int64
}

// look returns what folder dir holds, from what the Opener kept when the
// folder is unchanged, else read afresh.
func (o *Opener) look(dir string) (folder, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return folder{}, nil // a folder not made yet holds nothing
		}
		return look(dir)
	}
	k := folderKey{dev: st.Dev, ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	o.listMu.Lock()
	l, ok := o.listed[dir]
	o.listMu.Unlock()
	if ok && l.key == k {
		return l.f, nil
	}
	now := o.clock()
	f, err := look(dir)
	o.listMu.Lock()
	defer o.listMu.Unlock()
	o.listings++
	if err != nil || now.Sub(time.Unix(0, max(k.mtime, k.ctime))) < settled {
		return f, err
	}
	if o.listed == nil || len(o.listed) >= maxListings {
		o.listed = make(map[string]listing)
	}
	o.listed[dir] = listing{f: f, key: k}
	return f, nil
}

// clock is the Opener's time: now, unless a test set another.
func (o *Opener) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// dirNames lists the names in the folder dir through a bare descriptor:
// an *os.File of a folder tries the runtime's poller first, four calls
// more than the open, and a turn that opens its conversation cold lists
// its folder. Its errors are *fs.PathError.
func dirNames(dir string) ([]string, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	var names []string
	bp := direntBufs.Get().(*[direntBuf]byte)
	defer direntBufs.Put(bp)
	buf := bp[:]
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.ReadDirent(fd, buf)
			return err
		})
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// direntBuf is the size of the buffer dirNames reads a folder's entries
// into, many a conversation's folder's names at once. The buffers are
// pooled on the heap: one made in dirNames would be on the stack of the
// turn that lists its folder, and grow that turn's stack past 8 KiB
// (TestWaitingTurnStack).
const direntBuf = 4 << 10

var direntBufs = sync.Pool{New: func() any { return new([direntBuf]byte) }}

// ignoringEINTR calls f again while a signal interrupts it, as package
// os does for its own calls.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
