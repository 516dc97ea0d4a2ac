package disk

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"lnk.dev/linkharness/store/durable"
)

// Mem is a crashable filesystem in memory. It keeps, for each file, its
// bytes as they are now and as they were at its last good Sync, and for
// each name whether it is durable; Crash returns what a machine that lost
// its power would find. Each Mem also counts its operations, can fail any
// of them, and can call a test after each, so a test can crash a store at
// every write, sync and truncate.
//
// What survives a crash: a folder made by MkdirAll; a file whose name was
// made durable by a SyncDir of its folder after it was created, holding
// the bytes of its last good Sync (none if it had none), and, in the
// images of CrashTorn, half of what was appended to it since. A file whose
// name is not durable is gone, whatever was synced.
//
// A failed Sync (see Plan) does one of two things to what was written
// since the last good one. By default it drops it: the file's bytes go
// back to the synced ones, as a filesystem that drops dirty pages after a
// writeback error does. With Plan.Keep it does what Linux's page cache
// does: the bytes stay as they are, to be read, but they are not on the
// disk, and their pages are marked clean, so no later Sync puts them
// there. Until a byte of that region is written again or cut off, a
// crash finds there what the disk held before (zeros past its end
// then), even after a later Sync succeeds. A store that retries by
// reading what it wrote and syncing it again loses it.
//
// Folders are not made by OpenFile: a test makes the store's folder with
// MkdirAll, as the harness makes a conversation's with
// durable.MakeDirDeferred, and such a folder is durable at once: the model
// keeps no folder's name, so a store's SyncDir of its folder's parent (the
// harness leaves the folder's name to the store's first write) is seen in
// the Op it reports, not in a crash. "/" and "." always exist.
//
// Flocks are per open File, shared or exclusive, as flock(2)'s are.
//
// SyncFS syncs every file of the Mem, as syncfs(2) does a filesystem's,
// and a SyncFS that fails does to every file what a failed Sync does to
// its own: so a store that commits in a group (Committer) is crashed and
// failed as one that syncs alone is. It makes no name durable.
//
// The counted operations are OpenFile, WriteAt, Write, Truncate, Sync,
// SyncFS and SyncDir (see Kind); ReadAt, Stat, Lock and Close are not
// counted and never fail by a Plan.
//
// A Mem is safe for concurrent use; each File is for one goroutine at a
// time, as File says. The zero value is not usable: use NewMem.
type Mem struct {
	mu sync.Mutex
	// files are the names that exist now; durable says which of them
	// survive a crash.
	files   map[string]*memNode
	durable map[string]bool
	dirs    map[string]bool
	stamp   int64 // the last Changed stamp given to a file

	ops    int  // counted operations so far
	plan   Plan // the faults to inject; At 0 is none
	faults int  // faults injected so far

	noSyncDir bool
	onOp      func(Op)

	committer durable.Committer // the Mem's group commit, as the filesystem's
}

// memNode is one file.
type memNode struct {
	// data is the bytes now, synced those of the last good Sync. synced
	// is never changed in place, so a Sync or a Crash shares it rather
	// than copy it; while data shares its array (cow), data is copied
	// before a byte synced holds is changed.
	data   []byte
	synced []byte
	cow    bool
	mode   fs.FileMode
	// lost are the spans of data, apart and in order, that a failed Sync
	// kept readable (Plan.Keep) and no write has touched since: a Sync
	// keeps the bytes synced held there, not data's.
	lost    []span
	changed int64

	// ex holds the exclusive flock, shared the shared ones; freed is
	// closed and replaced whenever one is let go.
	ex     *memFile
	shared map[*memFile]bool
	freed  chan struct{}
}

// NewMem returns an empty Mem.
func NewMem() *Mem {
	return &Mem{
		files:   make(map[string]*memNode),
		durable: make(map[string]bool),
		dirs:    make(map[string]bool),
	}
}

// Committer is the Mem's group commit.
func (m *Mem) Committer() *durable.Committer { return &m.committer }

// MkdirAll makes the folder dir and the folders above it, durably.
func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	for d := dir; !root(d); d = filepath.Dir(d) {
		if m.files[d] != nil {
			return &fs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR}
		}
	}
	for d := dir; !root(d); d = filepath.Dir(d) {
		m.dirs[d] = true
	}
	return nil
}

func root(dir string) bool { return dir == "/" || dir == "." }

// isDir says whether dir is a folder; m.mu is held.
func (m *Mem) isDir(dir string) bool { return root(dir) || m.dirs[dir] }

// OpenFile opens name. The flags it knows are the access modes,
// os.O_CREATE, os.O_EXCL, os.O_TRUNC and os.O_APPEND. A folder cannot be
// opened.
func (m *Mem) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	name = filepath.Clean(name)
	n, errno := m.count()
	op := Op{N: n, Kind: OpOpen, Path: name}
	f, err := m.open(name, flag, perm, errno)
	op.Err, op.Fault = err, errno != 0
	m.done(op)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (m *Mem) open(name string, flag int, perm fs.FileMode, errno syscall.Errno) (*memFile, error) {
	fail := func(e error) (*memFile, error) { return nil, &fs.PathError{Op: "open", Path: name, Err: e} }
	if errno != 0 {
		return fail(errno)
	}
	if m.isDir(name) {
		return fail(syscall.EISDIR)
	}
	if !m.isDir(filepath.Dir(name)) {
		return fail(syscall.ENOENT)
	}
	node := m.files[name]
	switch {
	case node != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return fail(syscall.EEXIST)
	case node == nil && flag&os.O_CREATE == 0:
		return fail(syscall.ENOENT)
	case node == nil:
		m.stamp++
		node = &memNode{mode: perm.Perm(), changed: m.stamp}
		m.files[name] = node
	}
	f := &memFile{m: m, node: node, name: name}
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		f.read = true
	case os.O_WRONLY:
		f.write = true
	case os.O_RDWR:
		f.read, f.write = true, true
	}
	f.append = flag&os.O_APPEND != 0
	if flag&os.O_TRUNC != 0 && f.write {
		m.stamp++
		node.data, node.changed = nil, m.stamp
		node.cow, node.lost = false, nil
	}
	return f, nil
}

// Stat says what name is.
func (m *Mem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	if m.isDir(name) {
		return memInfo{name: filepath.Base(name), mode: fs.ModeDir | 0o700}, nil
	}
	n := m.files[name]
	if n == nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.ENOENT}
	}
	return memInfo{name: filepath.Base(name), size: int64(len(n.data)), mode: n.mode}, nil
}

// ReadFile returns the bytes the file name holds now, as os.ReadFile
// does, for a test to look at. Like Stat, it is not counted and never
// fails by a Plan.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	n := m.files[name]
	if n == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	return append([]byte{}, n.data...), nil
}

// SyncDir makes durable the names of the files in each of dirs, as one
// operation: a fault fails it whole.
func (m *Mem) SyncDir(dirs ...string) error {
	if len(dirs) == 0 {
		return nil
	}
	dirs = slices.Clone(dirs)
	for i := range dirs {
		dirs[i] = filepath.Clean(dirs[i])
	}
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpSyncDir, Path: dirs[0], Dirs: dirs, Fault: errno != 0}
	if errno != 0 {
		op.Err = fmt.Errorf("fsync %s: %w", dirs[0], errno)
	}
	for _, dir := range dirs {
		if op.Err == nil && !m.isDir(dir) {
			op.Err = &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOENT}
		}
	}
	if op.Err == nil && !m.noSyncDir {
		for name := range m.files {
			if slices.Contains(dirs, filepath.Dir(name)) {
				m.durable[name] = true
			}
		}
	}
	err := op.Err
	m.done(op)
	return err
}

// memInfo is what Mem.Stat returns.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }
