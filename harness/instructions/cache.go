package instructions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/internal/missing"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
)

// What the prompt cache holds at most. Past either, it is emptied whole
// and filled again from the files: a bound, never an eviction policy to
// tune, since an agent's prompt reads a few dozen files.
const (
	maxCachedFiles = 512
	maxCachedBytes = 1 << 20
)

// racyAge is how recent a file's change may be for its contents to be
// kept: a file changed less than this before it was read is read again at
// the next turn, since a second change within the file system's clock tick
// could keep its size, inode and time (git's "racy" files).
const racyAge = 2 * time.Second

// Cache keeps what the prompt read of the agent's files (a file's
// text, a skill's parsed front matter, a folder's names), each under the
// file's identity and change (device, inode, size, modification and change
// times), so a turn with nothing changed opens and stats each file but
// reads and parses none. It holds at most maxCachedFiles entries and
// maxCachedBytes of text. Nothing in it is more than a copy of the files:
// a new process builds it again. The zero value is empty and ready; it is
// safe for concurrent use.
type Cache struct {
	mu    sync.Mutex // guards files and bytes
	files map[string]*cached
	bytes int

	memos // the texts last made from the files' texts

	missing missing.Files    // the files found missing, until their folders change
	Kernel  func() time.Time // the clock a file's and a folder's times are of: nil is time.Now; tests set a later one
}

// kernelNow is the time a folder's times are of, the kernel's clock, never
// a Runner's own: it tells whether a folder's times had settled.
func (c *Cache) kernelNow() time.Time {
	if c.Kernel != nil {
		return c.Kernel()
	}
	return time.Now()
}

// cached is one file's entry. It is never changed once in the cache.
type cached struct {
	key   fileKey
	text  string   // a file's text
	pathz []byte   // the entry's path, NUL-terminated for lstatz
	names []string // a folder's names
	paths []string // the path of each of a folder's names, without its "/" or "@"
	err   error    // what was wrong with the file, said once in the log; config.json's, said each turn
	skill skillMeta
	// set is config.json's settings as decoded, and setBytes the file's
	// size; nil for any other file.
	set      *settings.Settings
	setBytes int
}

// fileKey tells a file's version: any change to it changes one of these.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

func keyOf(fi os.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}, true
}

// unchanged returns path's entry when the file at path is the one the
// entry was made from, found with one lstat and no open. The lstat may
// pass through a symlinked folder, but an entry is only ever made from a
// file opened beneath the home with no symlink on the way, and a file is
// found unchanged only when it is that same file (device and inode) at the
// same version: what is returned is what was read safely. Anything else
// goes the safe way, opening the file again. A missing file is
// os.ErrNotExist.
//
// A file found missing is remembered with its nearest existing folder (see
// package missing): while that folder is unchanged, the file is missing
// still, told by one stat of the folder a turn, shared by every missing
// file in it, and none of the file's own.
func (r *Reader) unchanged(path string) (*cached, error) {
	c := r.Cache
	if r.missingTurn == 0 {
		r.missingTurn = c.missing.Turn()
	}
	gone, known := c.missing.Missing(path, r.missingTurn)
	if gone {
		return nil, os.ErrNotExist
	}
	var st unix.Stat_t
	e := c.peek(path)
	seen := c.kernelNow()
	var err error
	if e != nil {
		err = lstatz(e.pathz, &st)
	} else {
		err = unix.Lstat(path, &st)
	}
	switch {
	case err == unix.ENOENT:
		c.missing.Gone(path, r.missingTurn, seen)
		return nil, os.ErrNotExist
	case known:
		c.missing.Forget(path)
	}
	if err != nil || e == nil {
		return nil, nil
	}
	k := fileKey{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}
	if e.key != k {
		return nil, nil
	}
	return e, nil
}

// lstatz is unix.Lstat of a path kept NUL-terminated, as an entry keeps
// its own: a turn with nothing changed stats each of its files, and this
// spares each stat the copy of its path that unix.Lstat makes.
func lstatz(pathz []byte, st *unix.Stat_t) error {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, atFDCWD, uintptr(unsafe.Pointer(&pathz[0])),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// atFDCWD is unix.AT_FDCWD as a system call's argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

// peek returns path's entry, if any, as the cache holds it: whether the
// file is still that version is for the caller to find out.
func (c *Cache) peek(path string) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files[path]
}

func (c *Cache) get(path string, k fileKey) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.files[path]; e != nil && e.key == k {
		return e
	}
	return nil
}

// put keeps e for path unless the file changed too recently to tell a
// next change by its key. Its age is told by the kernel's clock, which the
// file's times are of, never a turn's own clock, which stamps its events:
// what a turn reads must not move that.
func (c *Cache) put(path string, e *cached) {
	now := c.kernelNow()
	if now.UnixNano()-e.key.mtime < int64(racyAge) || now.UnixNano()-e.key.ctime < int64(racyAge) {
		return
	}
	e.pathz = append([]byte(path), 0)
	n := e.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.files[path]; old != nil {
		c.bytes -= old.size()
	}
	if c.files == nil || len(c.files) >= maxCachedFiles || c.bytes+n > maxCachedBytes {
		c.files, c.bytes = make(map[string]*cached), 0
	}
	if n > maxCachedBytes {
		return
	}
	c.files[path] = e
	c.bytes += n
}

func (e *cached) size() int {
	n := len(e.text) + len(e.skill.Name) + len(e.skill.Description) + len(e.pathz) + e.setBytes
	for i, s := range e.names {
		n += len(s) + len(e.paths[i])
	}
	return n
}

// Len is how many entries the cache holds, and their bytes.
func (c *Cache) Len() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.files), c.bytes
}

// errTooLarge says a file is over its section's most.
var errTooLarge = errors.New("over its most")

// readFile returns the text of the file at path, beneath the agent's home
// and never through a symlink, at most most bytes, from the cache when the
// file is unchanged; fresh says it was read now. parse, when not nil, makes
// the entry from the bytes read, at most most of them (a skill's front
// matter); otherwise the file must be UTF-8 text, its error kept in the
// entry. A missing file is os.ErrNotExist.
func (r *Reader) readFile(path string, most int, parse func([]byte) *cached) (e *cached, fresh bool, err error) {
	if e, err := r.unchanged(path); err != nil || (e != nil && (parse != nil || len(e.text) <= most)) {
		return e, false, err
	}
	f, err := r.Agent.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a file", path)
	}
	if parse == nil && fi.Size() > int64(most) {
		return nil, false, fmt.Errorf("%s: %d bytes, %w of %d", path, fi.Size(), errTooLarge, most)
	}
	k, ok := keyOf(fi)
	if ok {
		if e := r.Cache.get(path, k); e != nil {
			return e, false, nil
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(most)+1))
	if err != nil {
		return nil, false, err
	}
	r.count(len(b))
	switch {
	case parse != nil:
		e = parse(b)
	case len(b) > most: // it grew since its stat
		return nil, false, fmt.Errorf("%s: %w of %d bytes", path, errTooLarge, most)
	default:
		e = &cached{}
		e.text, e.err = prompt.Text(b)
	}
	e.key = k
	if ok {
		r.Cache.put(path, e)
	}
	return e, true, nil
}

// list returns the folder at path, beneath the home and never through a
// symlink, from the cache when the folder is unchanged: its names, sorted,
// and the path of each. A folder's name ends in "/", a symlink's in "@", a
// file's in neither, and nothing else is listed. The entry is shared:
// never change it.
func (r *Reader) list(path string) (*cached, error) {
	if e, err := r.unchanged(path); err != nil || e != nil {
		return e, err
	}
	f, err := r.Agent.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", path)
	}
	k, ok := keyOf(fi)
	if ok {
		if e := r.Cache.get(path, k); e != nil {
			return e, nil
		}
	}
	entries, err := f.ReadDir(maxNames)
	if err != nil && err != io.EOF {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, d := range entries {
		switch {
		case d.IsDir():
			names = append(names, d.Name()+"/")
		case d.Type()&os.ModeSymlink != 0:
			names = append(names, d.Name()+"@")
		case d.Type().IsRegular():
			names = append(names, d.Name())
		}
	}
	slices.Sort(names)
	e := &cached{key: k, names: names, paths: make([]string, len(names))}
	for i, n := range names {
		e.paths[i] = filepath.Join(path, strings.TrimRight(n, "/@"))
	}
	if ok {
		r.Cache.put(path, e)
	}
	return e, nil
}

// child is the path of the folder's entry named name (with its "/" or
// "@"), and whether the folder holds it.
func (e *cached) child(name string) (string, bool) {
	if i, ok := slices.BinarySearch(e.names, name); ok {
		return e.paths[i], true
	}
	return "", false
}

// maxNames is the most names a folder is listed with.
const maxNames = 4096
