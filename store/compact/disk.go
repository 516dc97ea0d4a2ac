package compact

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"lnk.dev/linkharness/store/internal/disk"
)

// sync makes f durable, through the filesystem's Committer, which may sync
// it with other conversations' writes, timing it. After a failure nothing
// written since the last good one can be trusted to the descriptor again,
// so both files are closed, once the lock is let go, and opened afresh by
// the next call.
func (c *Conversation) sync(f disk.File) error {
	if c.opts.Unsynced {
		c.syncs.dirty = true
		return nil
	}
	start := time.Now()
	err := c.fs.Committer().Commit(f, c.syncs.mark)
	if c.opts.Synced != nil {
		c.opts.Synced(time.Since(start))
	}
	if err != nil {
		c.syncs.stale = true
		return fmt.Errorf("compact: fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// syncOrCut makes f durable after bytes were written to it from off on,
// or cuts them off if it fails. A failed fdatasync may leave them to be
// read though they are not on the disk, and a later one that succeeds
// does not put them there (Linux marks them written): a retried Append
// would find its line and acknowledge it, a fold its unit and empty the
// tail. Cut off, they are written again. If the cut fails too, the next
// call may still find them; nothing more can be done from here.
func (c *Conversation) syncOrCut(f disk.File, off int64) error {
	err := c.sync(f)
	if err != nil {
		f.Truncate(off)
	}
	return err
}

// rewrite writes f's bytes [off, end) again over themselves, from b if it
// holds them, else read from f. A writer that goes on from bytes it did
// not see made durable does this before its fdatasync: a failed
// fdatasync whose cut failed too may have left them readable though they
// are not on the disk, and no later fdatasync puts them there unless they
// are written again. Readers hold the lock shared, so none sees it.
func (c *Conversation) rewrite(f disk.File, b []byte, off, end int64) error {
	if end <= off {
		return nil
	}
	if b == nil {
		b = make([]byte, end-off)
		if err := readAt(f, b, off); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(b, off); err != nil {
		return fmt.Errorf("compact: write %s again at offset %d: %w", f.Name(), off, err)
	}
	return nil
}

// syncDir makes new names in the conversation's folder durable, and the
// folder's own in the folder it is in, in one wait: its maker left it to
// the first Append (durable.MakeDirDeferred).
func (c *Conversation) syncDir() error {
	if err := c.fs.SyncDir(c.dir, filepath.Dir(c.dir)); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// keep moves f's bytes cut describes to the file cut.To beside it,
// durably (disk.KeepCut).
func (c *Conversation) keep(cut Cut, f disk.File) error {
	if err := disk.KeepCut(c.fs, c.dir, disk.Cut(cut), f, FileMode); err != nil {
		return fmt.Errorf("compact: keep what is cut off %s in %s: %w", cut.From, c.dir+string(os.PathSeparator)+cut.To, err)
	}
	return nil
}
