package durable

import (
	"errors"
	"sync"
)

// ErrGroupSync comes from Commit when a sync of the whole filesystem
// failed after the Mark the caller took before writing: what it wrote may
// have been lost with it, though its own sync did not say so.
var ErrGroupSync = errors.New("durable: a sync of the filesystem failed since the write")

// errSyncPanicked is what the writers of a batch whose sync panicked get.
var errSyncPanicked = errors.New("durable: the sync of a batch panicked")

// A Committer makes the writes of one process durable, together when
// several wait at once: group commit. A writer whose file or folder is to
// be made durable calls Commit. While no sync runs, its own sync runs at
// once (a file's fdatasync, a folder's fsync), as it would without a
// Committer; while one runs, it waits for it to end with every writer that
// comes meanwhile, and then one of them syncs all of theirs in one go: one
// syncfs per filesystem, or the sync of one alone on its own. Under load
// many appends and new names share one sync; alone, each pays its own sync
// and no wait. A syncfs makes durable what every file of the filesystem
// holds and the names made in its folders (it commits the journal of
// ext4, xfs and btrfs alike), so files and folders share batches.
//
// A syncfs that fails may have marked clean, and lost, what any file of
// the filesystem held unsynced, not only its batch's files, and Linux
// reports such an error once. So the Committer counts the syncfs calls
// that failed, and a writer takes a Mark before it writes what its Commit
// is to make durable: Commit fails with ErrGroupSync when one failed
// since, as the writer's own sync would have. A writer that gets an
// error from Commit does what it does after a failed sync.
//
// A Committer is safe for concurrent use; its zero value is ready. The
// real filesystem's is the process's (OS); each of the stores' test
// filesystems has its own.
type Committer struct {
	mu sync.Mutex
	// running says a sync runs, and ended is closed when it ends. next
	// is the batch that waits for it, nil when none does.
	running bool
	ended   chan struct{}
	next    *batch

	failed  uint64 // syncfs calls that failed
	commits uint64 // Commit calls
	syncs   uint64 // sync and syncfs calls made
}

// A Syncer is what a Committer makes durable: an open file or folder.
type Syncer interface {
	// Sync makes it durable alone: a file's data and size (fdatasync),
	// a folder's names (fsync).
	Sync() error
	// SyncFS makes durable every file and name of the filesystem it is
	// on (syncfs).
	SyncFS() error
	// Device says which filesystem it is on: those with the same Device
	// are synced together by one SyncFS.
	Device() uint64
}

// batch is the files one sync makes durable, and what it returned for
// each.
type batch struct {
	files []Syncer
	errs  []error
	seen  uint64        // the Committer's failed count when its sync ended
	done  chan struct{} // closed once errs and seen are set
}

// Mark returns the count of failed syncs of the filesystem, to be given
// to the Commit of what the caller writes from now.
func (c *Committer) Mark() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// Commit makes what was written to f durable, with the files of other
// writers that commit meanwhile, and returns f's sync's error; or
// ErrGroupSync if a syncfs of any batch failed since mark was taken.
func (c *Committer) Commit(f Syncer, mark uint64) error {
	c.mu.Lock()
	c.commits++
	b, i := c.next, 0
	if b == nil {
		// Nobody waits: this writer leads the next sync.
		b = &batch{done: make(chan struct{})}
		c.next = b
	} else {
		i = len(b.files)
	}
	b.files = append(b.files, f)
	if i > 0 {
		c.mu.Unlock()
		<-b.done
		return result(b.errs[i], b.seen, mark)
	}
	for c.running {
		ended := c.ended
		c.mu.Unlock()
		<-ended
		c.mu.Lock()
	}
	c.next, c.running, c.ended = nil, true, make(chan struct{})
	c.mu.Unlock()
	synced := false
	defer func() {
		if !synced {
			// The sync panicked: the batch is told so, and the next
			// one goes on, as the panic goes up.
			c.mu.Lock()
			b.errs = make([]error, len(b.files))
			for i := range b.errs {
				b.errs[i] = errSyncPanicked
			}
			c.running = false
			close(c.ended)
			c.mu.Unlock()
			close(b.done)
		}
	}()

	errs, calls, failed := c.sync(b.files)
	synced = true

	c.mu.Lock()
	c.failed += failed
	c.syncs += calls
	b.errs, b.seen = errs, c.failed
	c.running = false
	close(c.ended)
	c.mu.Unlock()
	close(b.done)
	return result(errs[0], b.seen, mark)
}

// result is a member's answer: its sync's error, else ErrGroupSync when a
// syncfs failed after mark was taken and before its batch's sync ended
// (seen): one that fails later cannot have lost what its sync wrote.
func result(err error, seen, mark uint64) error {
	if err != nil {
		return err
	}
	if seen != mark {
		return ErrGroupSync
	}
	return nil
}

// sync makes the files durable: its own sync for one alone on its
// filesystem, one syncfs for each filesystem that holds several. It
// returns each file's error, how many calls it made and how many syncfs
// calls failed.
func (c *Committer) sync(files []Syncer) (errs []error, calls, failed uint64) {
	errs = make([]error, len(files))
	if len(files) == 1 {
		errs[0] = files[0].Sync()
		return errs, 1, 0
	}
	devs := make(map[uint64][]int, 1)
	for i, f := range files {
		d := f.Device()
		devs[d] = append(devs[d], i)
	}
	for _, at := range devs {
		calls++
		if len(at) == 1 {
			errs[at[0]] = files[at[0]].Sync()
			continue
		}
		err := files[at[0]].SyncFS()
		if err != nil {
			failed++
		}
		for _, i := range at {
			errs[i] = err
		}
	}
	return errs, calls, failed
}

// CommitStats are a Committer's counts.
type CommitStats struct {
	Commits uint64 // Commit calls: writes and names made durable
	Syncs   uint64 // sync and syncfs calls that made them so
	Failed  uint64 // syncfs calls that failed
}

// Stats returns the counts so far.
func (c *Committer) Stats() CommitStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CommitStats{Commits: c.commits, Syncs: c.syncs, Failed: c.failed}
}
