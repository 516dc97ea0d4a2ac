package disk

import (
	"fmt"
	"syscall"
)

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
	// Dirs are a SyncDir's folders, Path the first.
	Dirs []string
	Err  error // what it returned
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
