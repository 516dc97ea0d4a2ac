package ending

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// Errors of Elsewhere.
var (
	// ErrNotHeld comes when no process holds the conversation: no turn of
	// it runs. Nothing is written.
	ErrNotHeld = errors.New("ending: no turn of the conversation is running")
	// ErrUnfinished comes when the turn let the conversation go without
	// an answer: its process stopped or died mid-way, and the next turn
	// goes on from where it left.
	ErrUnfinished = errors.New("ending: the turn let the conversation go before it answered")
)

// Elsewhere asks the turn of the conversation in folder dir, held by
// another process, to end, and returns the answer it ended with: its last
// answer once it let the conversation go, marked ended when the record
// ended it, not when it gave its answer first. conv is the conversation
// opened to read it; tick is how often it looks (0: Every). It waits while
// the turn runs on, until ctx is done.
func Elsewhere(ctx context.Context, dir string, conv store.Conversation, tick time.Duration) (event.Event, error) {
	if tick <= 0 {
		tick = Every
	}
	var asked int64 // the seq the record written names; 0 before one is
	for first := true; ; first = false {
		release, err := hold(ctx, dir, conv)
		if err == nil {
			defer release()
			if asked != 0 {
				// A turn that gave its answer before it read the record
				// left it: no later turn honors it (see Watch.After), and
				// it goes with the turn it asked.
				if err := Clear(dir); err != nil {
					return event.Event{}, errPath(dir, err)
				}
			}
			if first {
				return event.Event{}, ErrNotHeld
			}
			return lastAnswer(ctx, conv)
		}
		if !errors.Is(err, errHeld) {
			return event.Event{}, err
		}
		last, mid, err := lastEvent(ctx, conv)
		if err != nil {
			return event.Event{}, err
		}
		// Asked of the turn mid-way: one that gave its answer and holds
		// the conversation on (its summary) is not asked; a turn that took
		// it and has not written its message yet is asked once it has.
		if mid && last > asked {
			if err := Ask(dir, last); err != nil {
				return event.Event{}, errPath(dir, err)
			}
			asked = last
		}
		t := time.NewTimer(tick)
		select {
		case <-ctx.Done():
			t.Stop()
			return event.Event{}, ctx.Err()
		case <-t.C:
		}
	}
}

// errHeld is hold's when another holds the conversation.
var errHeld = errors.New("ending: held")

// hold takes the conversation as a turn would, without waiting: its
// store's lease where it keeps leases, else its folder's flock. errHeld
// says another holds it.
func hold(ctx context.Context, dir string, conv store.Conversation) (func(), error) {
	if l, ok := conv.(store.Leaser); ok {
		host, _ := os.Hostname()
		token, err := l.Lease(ctx, fmt.Sprintf("end@%s:%d", host, os.Getpid()), store.LeaseTTL)
		switch {
		case err == nil:
			return func() { _ = l.Release(context.WithoutCancel(ctx), token) }, nil
		case errors.Is(err, store.ErrLeaseHeld):
			return nil, errHeld
		case !errors.Is(err, store.ErrUnsupported):
			return nil, err
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ending: %s: %w", dir, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return nil, errHeld
		}
		return nil, fmt.Errorf("ending: lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// lastEvent reads the conversation's last event: its seq, and whether a
// turn is mid-way there: a message, a result, or an answer calling tools.
func lastEvent(ctx context.Context, conv store.Conversation) (int64, bool, error) {
	var (
		e    event.Event
		dec  event.Decoder
		at   int64
		derr error
	)
	err := conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		at, derr = seq, dec.Decode(ev, &e)
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil || at == 0 {
		return 0, false, err
	}
	mid := e.Type == event.TypeMessage || e.Type == event.TypeResult || e.Type == event.TypeAnswer && len(e.Calls) > 0
	return at, mid, nil
}

// lastAnswer reads the answer the conversation's last turn ended with:
// its last event that is not a summary, which is an answer that calls
// nothing, or the turn did not finish.
func lastAnswer(ctx context.Context, conv store.Conversation) (event.Event, error) {
	var (
		e    event.Event
		dec  event.Decoder
		derr error
	)
	err := conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		e = event.Event{}
		derr = dec.Decode(ev, &e)
		e.Seq = seq
		return derr == nil && e.Type == event.TypeSummary
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return event.Event{}, err
	}
	if e.Type != event.TypeAnswer || len(e.Calls) > 0 {
		return event.Event{}, ErrUnfinished
	}
	return e, nil
}
