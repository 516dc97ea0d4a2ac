package compact

import (
	"fmt"
	"os"
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
		c.dirty = true
		return nil
	}
	start := time.Now()
	err := c.fs.Committer().Commit(f, c.mark)
	if c.opts.Synced != nil {
		c.opts.Synced(time.Since(start))
	}
	if err != nil {
		c.stale = true
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

// syncDir makes new names in the conversation's folder durable.
func (c *Conversation) syncDir() error {
	if err := c.fs.SyncDir(c.dir); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	return nil
}

// keepTorn appends bytes cut off a file to the torn file name beside it,
// durably, as one record: a line saying where they were, then the bytes
// and a '\n'.
func (c *Conversation) keepTorn(name, from string, off int64, b []byte) error {
	head := fmt.Appendf(nil, "# %s offset %d, %d bytes, cut %s\n", from, off, len(b), time.Now().UTC().Format(time.RFC3339Nano))
	rec := append(append(head, b...), '\n')
	path := c.dir + string(os.PathSeparator) + name
	f, err := c.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("compact: keep what is cut off %s: %w", from, err)
	}
	_, err = f.Write(rec)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("compact: keep what is cut off %s in %s: %w", from, path, err)
	}
	return c.syncDir()
}
