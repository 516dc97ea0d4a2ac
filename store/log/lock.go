package log

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

func (c *Conversation) lockError(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return fmt.Errorf("log: waiting for the lock on %s: %w", c.path, err)
	}
	return fmt.Errorf("log: lock %s: %w", c.path, err)
}

// sync makes what was written to the log durable, and times it.
func (c *Conversation) sync() error { return c.commit(-1) }

// commit makes what was written to the log durable, through the
// filesystem's Committer, which may sync it with other conversations'
// writes, and times it. If that fails and off is not negative, it cuts the
// log back to off, the end before the lines it was to make durable (see
// write).
func (c *Conversation) commit(off int64) error {
	start := time.Now()
	err := c.fs.Committer().Commit(c.f, c.mark)
	if c.opts.Synced != nil {
		c.opts.Synced(time.Since(start))
	}
	if err != nil {
		if off >= 0 {
			c.f.Truncate(off)
		}
		// After a failed fdatasync the kernel may have dropped the dirty
		// pages, or kept them and lost their error: nothing written
		// since the last good one can be trusted to this descriptor
		// again.
		c.drop()
		return fmt.Errorf("log: fdatasync %s: %w", c.path, err)
	}
	c.from = -1
	if c.tip.ok {
		c.tip.synced = true // the end this Conversation wrote is durable
	}
	return nil
}

// syncDir makes the names of the files in the folder durable, and the
// folder's own in the folder it is in, in one wait: its maker left it to
// the first line (durable.MakeDirDeferred).
func (c *Conversation) syncDir() error {
	if err := c.fs.SyncDir(c.dir, filepath.Dir(c.dir)); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	return nil
}
