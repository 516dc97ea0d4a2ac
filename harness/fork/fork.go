package fork

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// Fork asks for a new conversation from an old one: its events before
// Before, an owner message of the old one, then a message of Text in its
// place.
type Fork struct {
	Before int64  // the seq of the owner message the fork replaces
	Text   string // the new message's text
	ID     string // the new message's id; may be empty
	Thread string // the new conversation's thread; empty: <thread>:fork<before>, then .2, .3 … until one is free
}

// maxForkNames is how many default names a fork tries before it gives up.
const maxForkNames = 1000

// Make makes a new conversation whose events are thread's before
// f.Before, byte for byte with their times (the first one's thread key
// alone names the new thread, as every conversation's first event does),
// and its tool restrictions, then takes a turn on it with the new message:
// sent as the old message was (its sender, owner, connection), answered
// like any. The fork's prompt is the old one's up to the replaced message,
// so the provider's cache of it holds. The new conversation is kept as a
// new conversation is ([storage] conversations). The answer names the new
// thread.
func Make(ctx context.Context, r *turn.Runner, thread string, f Fork, onText func(string)) (turn.Answer, error) {
	m := turn.Message{ID: f.ID, Text: f.Text, Owner: true}
	if err := m.Check(); err != nil {
		return turn.Answer{}, err
	}
	prefix, old, err := prefixOf(ctx, r, thread, f.Before)
	if err != nil {
		return turn.Answer{}, err
	}
	m.From, m.Connection = old.From, old.Connection
	only, err := r.ToolsOf(ctx, thread)
	if err != nil {
		return turn.Answer{}, fmt.Errorf("the tools of %q: %w", thread, err)
	}
	name, err := write(ctx, r, thread, f, prefix, only)
	if err != nil {
		return turn.Answer{}, err
	}
	r.Metrics.Did(metrics.OpFork)
	logger(r).Info("forked", "agent", r.Agent.Name, "thread", thread, "seq", f.Before, "fork", name)
	return r.Message(ctx, name, m, onText)
}

// prefixOf reads thread's events before before, each its own copy, and
// the message at before, which must be an owner's.
func prefixOf(ctx context.Context, r *turn.Runner, thread string, before int64) ([][]byte, event.Event, error) {
	var at event.Event
	conv, err := r.Conversation(thread)
	if errors.Is(err, store.ErrNotFound) {
		return nil, at, fmt.Errorf("%w: no conversation %q", turn.ErrBadFork, thread)
	}
	if err != nil {
		return nil, at, err
	}
	defer conv.Close()
	last, err := conv.Last(ctx)
	if err != nil {
		return nil, at, err
	}
	if before < 1 || before > last {
		return nil, at, fmt.Errorf("%w: before %d is not a seq of %q, which has 1 to %d", turn.ErrBadFork, before, thread, last)
	}
	var (
		prefix [][]byte
		dec    event.Decoder
		derr   error
	)
	err = conv.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		if seq < before {
			prefix = append(prefix, append([]byte(nil), ev...))
			return true
		}
		derr = dec.Decode(ev, &at)
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, at, err
	}
	switch {
	case at.Type != event.TypeMessage:
		return nil, at, fmt.Errorf("%w: seq %d of %q is of type %s, not an owner message", turn.ErrBadFork, before, thread, at.Type)
	case !at.Owner:
		return nil, at, fmt.Errorf("%w: seq %d of %q is a message from %q, not from the owner", turn.ErrBadFork, before, thread, at.From.Name)
	}
	return prefix, at, nil
}

// write writes the fork's conversation: prefix, the first event naming the
// new thread, and the narrowing only. It returns the new thread.
func write(ctx context.Context, r *turn.Runner, thread string, f Fork, prefix [][]byte, only *tools.Only) (string, error) {
	for i := 1; i <= maxForkNames; i++ {
		name := f.Thread
		if name == "" {
			name = thread + ":fork" + strconv.FormatInt(f.Before, 10)
			if i > 1 {
				name += "." + strconv.Itoa(i)
			}
		}
		taken, err := r.WriteNew(ctx, name, prefix, only, true)
		if err != nil || !taken {
			return name, err
		}
		if f.Thread != "" {
			return "", fmt.Errorf("%w: thread %q holds a conversation already", turn.ErrBadFork, name)
		}
	}
	return "", fmt.Errorf("%w: %q has %d forks before %d already", turn.ErrBadFork, thread, maxForkNames, f.Before)
}

// logger is r's logger, or one that logs nothing.
func logger(r *turn.Runner) *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}
