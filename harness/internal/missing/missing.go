// Package missing remembers files found missing, so that a file looked
// for at every turn, and not there, costs no system call of its own while
// nothing changed.
//
// A folder's entries change only with its modification and change times.
// So for a file found missing, Files keeps its nearest existing folder
// with that folder's identity and times (device, inode, mtime, ctime, to
// the nanosecond), and at the next turn stats only that folder: one stat,
// shared by every missing file under it. A folder that is the same, with
// the same times, has had no entry made or removed in it, and the missing
// file is still missing. Anything else looks at the file again.
//
// A folder's times come from the kernel's coarse clock, a tick (at most 10
// ms) behind, so an entry made within that tick of the file's look could
// leave the folder's times as they were. Its times are trusted only when
// they are older than Settled at the look: past that, any change gives the
// folder later times than those kept. A file made within Settled of its
// folder's last change is seen at the next turn all the same, since that
// turn looks at the file again.
package missing

import (
	"path/filepath"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Settled is how long before a file is found missing its folder's last
// change must be for the folder's times to tell whether it changed since.
const Settled = 100 * time.Millisecond

// maxFiles bounds the files remembered missing (and so their folders);
// past it, all are let go and remembered again as they are found.
const maxFiles = 1024

// Key is what says a folder is the one it was, unchanged: the same inode,
// the same times to the nanosecond. The zero Key is a folder that could
// not be stat'ed: it matches no kept one.
type Key struct {
	Dev, Ino     uint64
	Mtime, Ctime int64 // nanoseconds
}

func keyOf(st *unix.Stat_t) Key {
	return Key{Dev: st.Dev, Ino: st.Ino, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

// Still is the decision: a file found missing at seen, when its folder was
// kept, is still missing if the folder now is now: the same folder with
// the same times, and times that had settled when the file was found
// missing. Otherwise the file must be looked at again.
func Still(kept Key, seen time.Time, now Key) bool {
	return kept != Key{} && kept == now && seen.UnixNano()-max(kept.Mtime, kept.Ctime) >= int64(Settled)
}

// Files is the files found missing. It is safe for concurrent use; the
// zero value is empty and ready.
type Files struct {
	mu      sync.Mutex // guards the fields below
	turn    uint64     // the last turn begun
	files   map[string]file
	folders map[string]*folder
	stats   int // the folders' stats made by Missing, as tests count them
}

// file is a file found missing: its nearest existing folder, as it was
// then, and when.
type file struct {
	folder *folder
	key    Key
	seen   time.Time
}

// folder is a folder a missing file is in, as its last stat found it.
type folder struct {
	path  string
	pathz []byte // path, NUL-terminated for statz
	key   Key
	turn  uint64 // the turn of that stat: a later turn stats it again
}

// Turn begins a turn: the folders Missing looks at are stat'ed once in
// it, whatever number of missing files they hold. Turns may overlap: a
// turn uses any stat made since it began, its own or another's.
func (fs *Files) Turn() uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.turn++
	return fs.turn
}

// Missing says whether the file at path, found missing before, still is,
// known by a stat of its folder at most once in turn; known says it was
// found missing before. A file not known missing, or whose folder
// changed, must be looked at: Gone remembers it if it is missing still,
// Forget lets it go if it is there.
func (fs *Files) Missing(path string, turn uint64) (missing, known bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.files[path]
	if !ok {
		return false, false
	}
	fs.stat(f.folder, turn)
	return Still(f.key, f.seen, f.folder.key), true
}

// stat stats d unless it was stat'ed in turn or later.
func (fs *Files) stat(d *folder, turn uint64) {
	if d.turn >= turn {
		return
	}
	d.turn = fs.turn
	fs.stats++
	var st unix.Stat_t
	if err := statz(d.pathz, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		d.key = Key{}
		return
	}
	d.key = keyOf(&st)
}

// statz is unix.Stat of a path kept NUL-terminated: a turn with nothing
// changed stats each folder, and this spares each stat the copy of its
// path that unix.Stat makes.
func statz(pathz []byte, st *unix.Stat_t) error {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, atFDCWD, uintptr(unsafe.Pointer(&pathz[0])),
		uintptr(unsafe.Pointer(st)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// atFDCWD is unix.AT_FDCWD as a system call's argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

// Forget lets go of path, which is there.
func (fs *Files) Forget(path string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.files, path)
}

// Gone remembers that the file at path, looked at in turn, was missing at
// seen, a time taken before it was looked at: its lstat said ENOENT, so
// its folder holds no entry of its name, not even a symlink. It finds the
// file's nearest existing folder by lstat, from the file's folder up, and
// keeps that folder's identity and times. Where the way up meets a symlink
// that leads to no folder, or anything but a folder, nothing is kept: the
// file is looked at each turn.
func (fs *Files) Gone(path string, turn uint64, seen time.Time) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.files, path)
	var st unix.Stat_t
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if d := fs.folders[dir]; d != nil && d.turn >= turn && d.key != (Key{}) {
			fs.keep(path, file{folder: d, key: d.key, seen: seen})
			return
		}
		err := unix.Lstat(dir, &st)
		if err == unix.ENOENT && dir != filepath.Dir(dir) {
			continue
		}
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.Stat(dir, &st)
		}
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
		d := fs.folders[dir]
		if d == nil {
			d = &folder{path: dir, pathz: append([]byte(dir), 0)}
		}
		d.key, d.turn = keyOf(&st), fs.turn
		fs.keep(path, file{folder: d, key: d.key, seen: seen})
		return
	}
}

// keep remembers f for path, within maxFiles.
func (fs *Files) keep(path string, f file) {
	if fs.files == nil || len(fs.files) >= maxFiles || len(fs.folders) >= maxFiles {
		fs.files, fs.folders = make(map[string]file), make(map[string]*folder)
	}
	fs.files[path] = f
	fs.folders[f.folder.path] = f.folder
}

// Len is how many files are remembered missing, and in how many folders.
func (fs *Files) Len() (files, folders int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.files), len(fs.folders)
}
