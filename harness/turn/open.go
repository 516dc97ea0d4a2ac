package turn

import (
	"context"
	"fmt"
	"os"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// Opener opens the conversation kept in folder dir, which exists. What the
// folder holds says how it is kept (a store.<driver> marker, events.zst, or
// else the log); kind, the spec's [storage] conversations, says only how a
// conversation with nothing in it yet starts. The programs wire the ways of
// keeping a conversation in one switch.
type Opener func(dir, kind string) (store.Conversation, error)

// OpenLog opens every conversation as a log, whatever kind says.
func OpenLog(dir, kind string) (store.Conversation, error) { return eventlog.Open(dir) }

// open opens the conversation, takes its lease where its store keeps
// leases, and checks its folder holds this thread.
func (t *turn) open(ctx context.Context, kind string) error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return err
	}
	open := t.r.Open
	if open == nil {
		open = OpenLog
	}
	conv, err := open(t.dir, kind)
	if err != nil {
		return err
	}
	// The lease before anything is read, so what the turn reads of the
	// conversation is what it appends after: another process's turn holds
	// it until its own ends. A store without leases is returned as it is.
	held, release, err := store.HoldLease(ctx, conv, "turn", store.LeaseTTL)
	if err != nil {
		conv.Close()
		return err
	}
	t.conv, t.release = held, release
	if t.last, err = held.Last(ctx); err != nil || t.last == 0 {
		return err
	}
	var first string
	err = held.Read(ctx, 1, store.Forward, func(_ int64, ev []byte) bool {
		t.read += int64(len(ev))
		var e event.Event
		if err := t.dec.Decode(ev, &e); err == nil {
			first, t.startConn = e.Thread, e.Connection
		}
		return false
	})
	if err != nil {
		return err
	}
	if first != t.thread {
		return fmt.Errorf("%w: %q holds %q, not %q", ErrThreadClash, t.dir, first, t.thread)
	}
	return nil
}

// Conversation opens thread's conversation to read it, the way its folder
// says it is kept. A thread with no folder is store.ErrNotFound.
func (r *Runner) Conversation(thread string) (store.Conversation, error) {
	dir, err := r.Agent.Path(home.Chat, thread)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%w: %q", store.ErrNotFound, thread)
	}
	open := r.Open
	if open == nil {
		open = OpenLog
	}
	return open(dir, "")
}
