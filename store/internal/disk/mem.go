package disk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
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
// MkdirAll, as the harness makes a conversation's with durable.MakeDir (which
// syncs the name of each folder it makes before the store is opened), and
// such a folder is durable at once. "/" and "." always exist.
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

	committer Committer // the Mem's group commit, as the filesystem's
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

// Kind is a kind of counted operation.
type Kind int

// The counted operations.
const (
	OpOpen     Kind = iota + 1 // FS.OpenFile
	OpWrite                    // File.WriteAt and File.Write
	OpTruncate                 // File.Truncate
	OpSync                     // File.Sync
	OpSyncDir                  // FS.SyncDir
	OpSyncFS                   // File.SyncFS
)

func (k Kind) String() string {
	switch k {
	case OpOpen:
		return "open"
	case OpWrite:
		return "write"
	case OpTruncate:
		return "truncate"
	case OpSync:
		return "sync"
	case OpSyncDir:
		return "syncdir"
	case OpSyncFS:
		return "syncfs"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Op is one counted operation, as OnOp reports it.
type Op struct {
	N    int    // its number: the Mem's first operation is 1
	Kind Kind   // what it was
	Path string // the file's or folder's name
	Err  error  // what it returned
	// Fault says the error (or part of it) was injected by the Plan.
	Fault bool
}

// Plan says which counted operations fail, and how.
type Plan struct {
	// At is the number of the first operation to fail; 0 fails none.
	At int
	// Every fails every operation from At on; else At alone fails.
	Every bool
	// Err is the error number, such as syscall.EIO or syscall.ENOSPC;
	// it comes wrapped as the os package wraps it.
	Err syscall.Errno
	// Short makes a failing WriteAt or Write write the first half of its
	// bytes before it fails, as a write that runs out of room does.
	Short bool
	// Keep makes a failing Sync keep what was written since the last
	// good one readable but never durable unless written again, as
	// Linux's page cache does; else it is dropped (see Mem).
	Keep bool
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
func (m *Mem) Committer() *Committer { return &m.committer }

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

// Fail sets the plan of faults, in place of any before. Fail(Plan{})
// fails nothing from then on.
func (m *Mem) Fail(p Plan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plan = p
}

// Faults returns how many operations failed by the plan so far.
func (m *Mem) Faults() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.faults
}

// Ops returns how many counted operations were made so far.
func (m *Mem) Ops() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// OnOp sets fn to be called after each counted operation, on the
// goroutine that made it, with no lock of the Mem held: fn may call
// Crash, or use the Mem. nil calls nothing.
func (m *Mem) OnOp(fn func(Op)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onOp = fn
}

// SkipSyncDir makes SyncDir do nothing but count and return nil, so a
// test can show that a missing folder sync is caught.
func (m *Mem) SkipSyncDir(skip bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noSyncDir = skip
}

// Crash returns a new Mem holding what would survive if the machine lost
// its power now: the folders, and the files whose names are durable with
// their synced bytes. m is not changed and its Files still work. The new
// Mem counts from 0, has no plan, no OnOp and no flocks.
func (m *Mem) Crash() *Mem { return m.crash(false) }

// CrashTorn is Crash where each durable file whose bytes now are its
// synced bytes and more (it was appended to since its last Sync) keeps
// the first half of the more as well: what a crash in the middle of the
// append's writeback leaves.
func (m *Mem) CrashTorn() *Mem { return m.crash(true) }

// Torn says whether CrashTorn's image would differ from Crash's.
func (m *Mem) Torn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.durable {
		if n := m.files[name]; len(tornTail(n.data, n.synced)) > 0 {
			return true
		}
	}
	return false
}

// tornTail returns what a torn crash keeps of now beyond synced.
func tornTail(now, synced []byte) []byte {
	if len(now) <= len(synced) || !bytes.Equal(now[:len(synced)], synced) {
		return nil
	}
	return now[len(synced) : len(synced)+(len(now)-len(synced))/2]
}

func (m *Mem) crash(torn bool) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.stamp = m.stamp
	for d := range m.dirs {
		c.dirs[d] = true
	}
	for name := range m.durable {
		n := m.files[name]
		kept := n.synced
		if tail := tornTail(n.data, kept); torn && len(tail) > 0 {
			kept = append(kept[:len(kept):len(kept)], tail...)
		}
		c.files[name] = &memNode{data: kept, synced: kept, cow: true, mode: n.mode, changed: n.changed}
		c.durable[name] = true
	}
	return c
}

// count counts an operation and says whether the plan fails it; m.mu is
// held.
func (m *Mem) count() (n int, fail syscall.Errno) {
	m.ops++
	n = m.ops
	p := m.plan
	if p.At > 0 && (n == p.At || p.Every && n > p.At) {
		m.faults++
		return n, p.Err
	}
	return n, 0
}

// done reports op to OnOp, with m.mu held; it unlocks m.mu.
func (m *Mem) done(op Op) {
	fn := m.onOp
	m.mu.Unlock()
	if fn != nil {
		fn(op)
	}
}

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

// SyncDir makes durable the names of the files in dir.
func (m *Mem) SyncDir(dir string) error {
	m.mu.Lock()
	dir = filepath.Clean(dir)
	n, errno := m.count()
	op := Op{N: n, Kind: OpSyncDir, Path: dir, Fault: errno != 0}
	switch {
	case errno != 0:
		op.Err = fmt.Errorf("fsync %s: %w", dir, errno)
	case !m.isDir(dir):
		op.Err = &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOENT}
	case m.noSyncDir:
	default:
		for name := range m.files {
			if filepath.Dir(name) == dir {
				m.durable[name] = true
			}
		}
	}
	err := op.Err
	m.done(op)
	return err
}

// memFile is an open file of a Mem.
type memFile struct {
	m    *Mem
	node *memNode
	name string

	read, write, append bool
	off                 int64 // where Write writes without os.O_APPEND
	closed              bool
	lock                int // 0, or the flock held: 1 shared, 2 exclusive
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	switch {
	case f.closed:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	case !f.read:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EBADF}
	case off < 0:
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	data := f.node.data
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(b, data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	if f.append {
		// As os.File.WriteAt says.
		return 0, errors.New("os: invalid use of WriteAt on file opened with O_APPEND")
	}
	return f.writeAt(b, off, false)
}

func (f *memFile) Write(b []byte) (int, error) { return f.writeAt(b, 0, true) }

// writeAt writes b at off, or at the end for a file opened with
// os.O_APPEND, or at f.off when next is set.
func (f *memFile) writeAt(b []byte, off int64, next bool) (int, error) {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpWrite, Path: f.name, Fault: errno != 0}
	wrote := 0
	switch {
	case f.closed:
		op.Err = &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrClosed}
	case !f.write:
		op.Err = &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	case off < 0:
		op.Err = &fs.PathError{Op: "writeat", Path: f.name, Err: errors.New("negative offset")}
	default:
		if next {
			off = f.off
			if f.append {
				off = int64(len(f.node.data))
			}
		}
		k := len(b)
		if errno != 0 {
			k = 0
			if m.plan.Short {
				k = len(b) / 2
			}
			op.Err = &fs.PathError{Op: "write", Path: f.name, Err: errno}
		}
		if k > 0 {
			f.node.put(b[:k], off)
			m.stamp++
			f.node.changed = m.stamp
		}
		wrote = k
		if next {
			f.off = off + int64(k)
		}
	}
	err := op.Err
	m.done(op)
	return wrote, err
}

// put writes b at off, growing the file with zeros if off is past its end.
func (n *memNode) put(b []byte, off int64) {
	if end := off + int64(len(b)); end > int64(len(n.data)) {
		n.resize(end)
	}
	n.own(off)
	copy(n.data[off:], b)
	n.lost = cut(n.lost, off, off+int64(len(b)))
}

// resize cuts the file or grows it with zeros to size.
func (n *memNode) resize(size int64) {
	n.lost = cut(n.lost, size, max(size, int64(len(n.data))))
	data := n.data
	switch {
	case size <= int64(len(data)):
		n.data = data[:size]
	case size <= int64(cap(data)):
		// The bytes past len(data) may be another slice's still: a synced
		// one from before a Truncate, kept by this Mem or by an image.
		if n.cow {
			n.data = append(make([]byte, 0, cap(data)), data...)
			n.cow = false
		}
		old := len(n.data)
		n.data = n.data[:size]
		clear(n.data[old:])
	default:
		grown := make([]byte, size, max(size, 2*int64(cap(data))))
		copy(grown, data)
		n.data, n.cow = grown, false
	}
}

// own copies data to an array of its own if a change from off on would
// change bytes synced holds.
func (n *memNode) own(off int64) {
	if n.cow && off < int64(len(n.synced)) {
		n.data = append(make([]byte, 0, cap(n.data)), n.data...)
		n.cow = false
	}
}

func (f *memFile) Truncate(size int64) error {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpTruncate, Path: f.name, Fault: errno != 0}
	switch {
	case errno != 0:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: errno}
	case f.closed:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrClosed}
	case !f.write:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	case size < 0:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	default:
		f.node.resize(size)
		m.stamp++
		f.node.changed = m.stamp
	}
	err := op.Err
	m.done(op)
	return err
}

// Sync makes the file's bytes durable. Like disk.OS's, its error is the
// bare error number. When it fails, the bytes written since the last good
// Sync are dropped.
func (f *memFile) Sync() error {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpSync, Path: f.name, Fault: errno != 0}
	switch {
	case f.closed:
		op.Err = &fs.PathError{Op: "sync", Path: f.name, Err: fs.ErrClosed}
	case errno != 0:
		op.Err = errno
		m.failSync(f.node)
	default:
		f.node.sync()
	}
	err := op.Err
	m.done(op)
	return err
}

// SyncFS syncs every file of the Mem: each as Sync does, and when it
// fails each as a failed Sync does.
func (f *memFile) SyncFS() error {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpSyncFS, Path: f.name, Fault: errno != 0}
	switch {
	case f.closed:
		op.Err = &fs.PathError{Op: "syncfs", Path: f.name, Err: fs.ErrClosed}
	case errno != 0:
		op.Err = errno
		for _, node := range m.files {
			if !bytes.Equal(node.data, node.synced) {
				m.failSync(node)
			}
		}
	default:
		for _, node := range m.files {
			node.sync()
		}
	}
	err := op.Err
	m.done(op)
	return err
}

// Device is the same for every file: a Mem is one filesystem.
func (f *memFile) Device() uint64 { return 0 }

// failSync does to node what a failed Sync does, as the plan says; m.mu
// is held.
func (m *Mem) failSync(node *memNode) {
	if m.plan.Keep {
		node.lose()
		return
	}
	node.data, node.cow, node.lost = node.synced, true, nil
	m.stamp++
	node.changed = m.stamp
}

// sync makes node's bytes now its synced ones, but for what a failed Sync
// kept readable: the disk keeps what it held there.
func (node *memNode) sync() {
	if len(node.lost) > 0 {
		synced := bytes.Clone(node.data)
		for _, s := range node.lost {
			for i := s.from; i < s.to; i++ {
				synced[i] = 0
				if i < int64(len(node.synced)) {
					synced[i] = node.synced[i]
				}
			}
		}
		node.synced = synced
		return
	}
	// A full slice, so an append to data never shows through it.
	node.synced = node.data[:len(node.data):len(node.data)]
	node.cow = true
}

// span is the bytes [from, to) of a file.
type span struct{ from, to int64 }

// lose adds to n.lost the bytes of data that differ from synced's, or
// that synced does not reach: what a failed Sync did not write.
func (n *memNode) lose() {
	data, synced := n.data, n.synced
	for i := 0; i < len(data); {
		if i < len(synced) && data[i] == synced[i] {
			i++
			continue
		}
		j := i
		for j < len(data) && (j >= len(synced) || data[j] != synced[j]) {
			j++
		}
		n.lost = add(n.lost, int64(i), int64(j))
		i = j
	}
}

// add returns spans with [from, to) added, apart and in order still.
func add(spans []span, from, to int64) []span {
	out := make([]span, 0, len(spans)+1)
	for _, s := range spans {
		switch {
		case s.to < from:
			out = append(out, s)
		case to < s.from:
			out = append(out, span{from, to})
			from, to = s.from, s.to
		default:
			from, to = min(from, s.from), max(to, s.to)
		}
	}
	return append(out, span{from, to})
}

// cut returns spans without [from, to).
func cut(spans []span, from, to int64) []span {
	if len(spans) == 0 || from >= to {
		return spans
	}
	var out []span
	for _, s := range spans {
		if s.from < from {
			out = append(out, span{s.from, min(s.to, from)})
		}
		if s.to > to {
			out = append(out, span{max(s.from, to), s.to})
		}
	}
	return out
}

func (f *memFile) Stat() (Info, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return Info{}, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	return Info{Size: int64(len(f.node.data)), Changed: f.node.changed}, nil
}

// Lock takes the flock as flock(2) does: a File holding the other kind
// lets go of it first. With ctx done it takes a free flock still, and
// returns ctx.Err() rather than wait, as disk.OS's does.
func (f *memFile) Lock(ctx context.Context, exclusive bool) error {
	want := 1
	if exclusive {
		want = 2
	}
	m := f.m
	for {
		m.mu.Lock()
		if f.closed {
			m.mu.Unlock()
			return &fs.PathError{Op: "flock", Path: f.name, Err: fs.ErrClosed}
		}
		if f.lock != want {
			f.release()
		}
		n := f.node
		free := n.ex == nil && (want == 1 || len(n.shared) == 0)
		if f.lock == want || free {
			if f.lock != want {
				f.lock = want
				if want == 2 {
					n.ex = f
				} else {
					if n.shared == nil {
						n.shared = make(map[*memFile]bool)
					}
					n.shared[f] = true
				}
			}
			m.mu.Unlock()
			return nil
		}
		if n.freed == nil {
			n.freed = make(chan struct{})
		}
		freed := n.freed
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-freed:
		}
	}
}

func (f *memFile) Unlock() {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.release()
}

// release lets go of f's flock; f.m.mu is held.
func (f *memFile) release() {
	n := f.node
	switch f.lock {
	case 0:
		return
	case 1:
		delete(n.shared, f)
	case 2:
		n.ex = nil
	}
	f.lock = 0
	if n.freed != nil {
		close(n.freed)
		n.freed = nil
	}
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.release()
	f.closed = true
	return nil
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
