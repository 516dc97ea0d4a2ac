package chatdir

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// OpenFolder opens a conversation's folder dir, for its flock (Lock). A
// flock belongs to the open file, so it holds between Runners in one
// process as across processes, and it goes with a process that dies; a
// warm conversation keeps the folder open between its turns and takes and
// lets go of the flock on it each turn.
func OpenFolder(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("chatdir: lock %s: %w", dir, err)
	}
	return fd, nil
}

// Lock takes an exclusive flock on fd, the conversation's folder dir open.
// While another holds it (another process's turn, or a process stuck with
// the folder locked) it tries again at growing intervals, until the turn's
// ctx is done (its time, the process's stop) or its caller's is: then
// busy, with the cause, and nothing of the message is written. The caller
// closes fd when it fails.
func Lock(ctx, caller context.Context, fd int, dir string, busy error) error {
	wait := 100 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return fmt.Errorf("chatdir: lock %s: %w", dir, err)
		}
		tm := time.NewTimer(wait)
		var done context.Context
		select {
		case <-ctx.Done():
			done = ctx
		case <-caller.Done():
			done = caller
		case <-tm.C:
		}
		if done != nil {
			tm.Stop()
			return fmt.Errorf("%w: %s: %v", busy, dir, context.Cause(done))
		}
		wait = min(2*wait, maxLockPoll)
	}
}

// maxLockPoll is the longest Lock waits between two tries.
const maxLockPoll = 50 * time.Millisecond
