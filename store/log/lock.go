package log

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func (c *Conversation) lockError(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return fmt.Errorf("log: waiting for the lock on %s: %w", c.path, err)
	}
	return fmt.Errorf("log: lock %s: %w", c.path, err)
}

// sync makes what was written to the log durable, and times it.
func (c *Conversation) sync() error {
	start := time.Now()
	var err error
	for {
		if err = unix.Fdatasync(c.fd); err != unix.EINTR {
			break
		}
	}
	if c.opts.Synced != nil {
		c.opts.Synced(time.Since(start))
	}
	if err != nil {
		// After a failed fdatasync the kernel may have dropped the dirty
		// pages and their error: nothing written since the last good one
		// can be trusted to this descriptor again.
		c.drop()
		return fmt.Errorf("log: fdatasync %s: %w", c.path, err)
	}
	return nil
}

// syncDir makes a new file's name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("log: fsync %s: %w", dir, err)
	}
	return nil
}
