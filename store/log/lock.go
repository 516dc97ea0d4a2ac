package log

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes the flock how (unix.LOCK_EX or unix.LOCK_SH) on fd. A
// flock belongs to the open file, so it serializes writers in one process
// as well as across processes, and it goes when its holder dies. Without a
// deadline or cancellation it waits in the kernel; otherwise it tries
// again at growing intervals until ctx is done.
func lockFile(ctx context.Context, fd, how int) error {
	if ctx.Done() == nil {
		for {
			err := unix.Flock(fd, how)
			if err != unix.EINTR {
				return err
			}
		}
	}
	wait := 100 * time.Microsecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// unlockFile lets go of fd's flock. Closing the file would too, so an
// error here changes nothing and is not reported.
func unlockFile(fd int) {
	for unix.Flock(fd, unix.LOCK_UN) == unix.EINTR {
	}
}

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
