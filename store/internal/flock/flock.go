// Package flock takes and lets go of the flock that serializes a
// conversation's writers, for the stores that keep a conversation in files
// (the log and compact).
package flock

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes the flock how (unix.LOCK_EX or unix.LOCK_SH) on fd. A flock
// belongs to the open file, so it serializes writers in one process as well
// as across processes, and it goes when its holder dies. Without a deadline
// or cancellation it waits in the kernel; otherwise it tries again at
// growing intervals until ctx is done.
func Lock(ctx context.Context, fd, how int) error {
	// Tried first without waiting: a flock nobody holds is taken without
	// asking ctx for its Done channel, which a context makes when first
	// asked and keeps for its life.
	err := unix.Flock(fd, how|unix.LOCK_NB)
	if err != unix.EWOULDBLOCK && err != unix.EINTR {
		return err // taken, or failed
	}
	if ctx.Done() == nil {
		for err == unix.EWOULDBLOCK || err == unix.EINTR {
			err = unix.Flock(fd, how)
		}
		return err
	}
	for wait := 100 * time.Microsecond; err == unix.EWOULDBLOCK || err == unix.EINTR; wait = min(2*wait, 10*time.Millisecond) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err = unix.Flock(fd, how|unix.LOCK_NB)
	}
	return err
}

// Unlock lets go of fd's flock; closing the file would too.
func Unlock(fd int) {
	for unix.Flock(fd, unix.LOCK_UN) == unix.EINTR {
	}
}
