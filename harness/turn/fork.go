package turn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// ErrBadFork comes when a fork cannot be made as asked: before is not an
// owner message of the conversation, or the new thread is taken. Nothing
// is written.
var ErrBadFork = errors.New("turn: bad fork")

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

// Fork makes a new conversation whose events are thread's before
// f.Before, byte for byte with their times (the first one's thread key
// alone names the new thread, as every conversation's first event does),
// and its tool restrictions, then takes a turn on it with the new message:
// sent as the old message was (its sender, owner, connection), answered
// like any. The fork's prompt is the old one's up to the replaced message,
// so the provider's cache of it holds. The new conversation is kept as a
// new conversation is ([storage] conversations). The answer names the new
// thread.
func (r *Runner) Fork(ctx context.Context, thread string, f Fork, onText func(string)) (Answer, error) {
	m := Message{ID: f.ID, Text: f.Text, Owner: true}
	if err := m.Check(); err != nil {
		return Answer{}, err
	}
	prefix, old, err := r.forkPrefix(ctx, thread, f.Before)
	if err != nil {
		return Answer{}, err
	}
	m.From, m.Connection = old.From, old.Connection
	only, err := r.toolsOf(ctx, thread)
	if err != nil {
		return Answer{}, fmt.Errorf("the tools of %q: %w", thread, err)
	}
	name, err := r.writeFork(ctx, thread, f, prefix, only)
	if err != nil {
		return Answer{}, err
	}
	r.Metrics.Did(metrics.OpFork)
	r.logger().Info("forked", "agent", r.Agent.Name, "thread", thread, "seq", f.Before, "fork", name)
	return r.Message(ctx, name, m, onText)
}

// forkPrefix reads thread's events before before, each its own copy, and
// the message at before, which must be an owner's.
func (r *Runner) forkPrefix(ctx context.Context, thread string, before int64) ([][]byte, event.Event, error) {
	var at event.Event
	conv, err := r.Conversation(thread)
	if errors.Is(err, store.ErrNotFound) {
		return nil, at, fmt.Errorf("%w: no conversation %q", ErrBadFork, thread)
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
		return nil, at, fmt.Errorf("%w: before %d is not a seq of %q, which has 1 to %d", ErrBadFork, before, thread, last)
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
		return nil, at, fmt.Errorf("%w: seq %d of %q is of type %s, not an owner message", ErrBadFork, before, thread, at.Type)
	case !at.Owner:
		return nil, at, fmt.Errorf("%w: seq %d of %q is a message from %q, not from the owner", ErrBadFork, before, thread, at.From.Name)
	}
	return prefix, at, nil
}

// toolsOf is the tools thread was narrowed to, kept by its store or in
// tools.json; nil when it never was.
func (r *Runner) toolsOf(ctx context.Context, thread string) (*tools.Only, error) {
	dir, err := r.Folder(ctx, thread)
	if err != nil {
		return nil, err
	}
	conv, err := r.conversationIn(dir, thread)
	if err != nil {
		return nil, err
	}
	defer conv.Close()
	meta, _ := ability[store.Meta](conv)
	return tools.NarrowingOf(ctx, dir, meta)
}

// writeFork writes the fork's conversation: prefix, the first event naming
// the new thread, and the narrowing only. It returns the new thread.
func (r *Runner) writeFork(ctx context.Context, thread string, f Fork, prefix [][]byte, only *tools.Only) (string, error) {
	for i := 1; i <= maxForkNames; i++ {
		name := f.Thread
		if name == "" {
			name = thread + ":fork" + strconv.FormatInt(f.Before, 10)
			if i > 1 {
				name += "." + strconv.Itoa(i)
			}
		}
		taken, err := r.writeNew(ctx, name, prefix, only, true)
		if err != nil || !taken {
			return name, err
		}
		if f.Thread != "" {
			return "", fmt.Errorf("%w: thread %q holds a conversation already", ErrBadFork, name)
		}
	}
	return "", fmt.Errorf("%w: %q has %d forks before %d already", ErrBadFork, thread, maxForkNames, f.Before)
}

// writeNew writes events as the new conversation of name, narrowed to
// only, holding it as a turn does, and says whether it was taken (then
// nothing is written). With rename, the first event is made to name the
// new thread; else it is written as it is.
func (r *Runner) writeNew(ctx context.Context, name string, prefix [][]byte, only *tools.Only, rename bool) (taken bool, err error) {
	dir, err := r.Folder(ctx, name)
	if err != nil {
		return false, err
	}
	h, err := r.locks.Lock(ctx, dir, nil)
	if err != nil {
		return false, err
	}
	defer h.Unlock()
	t := &turn{r: r, c: r.caches(), thread: name, dir: dir, ops: operations{in: h.In, caller: ctx}}
	defer t.close()
	s, err := t.settings()
	if err != nil {
		return false, err
	}
	if err := t.open(ctx, s.Storage.Conversations); errors.Is(err, ErrThreadClash) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	if t.last != 0 {
		return true, nil
	}
	if only != nil {
		n, _ := ability[store.Narrower](t.conv)
		if err := tools.NarrowNew(ctx, dir, n, only.Entries); err != nil {
			return false, err
		}
	}
	var e event.Event
	for i, ev := range prefix {
		if i == 0 && rename { // the first event names its thread
			if err := t.dec.Decode(ev, &e); err != nil {
				return false, fmt.Errorf("event 1 of the conversation forked: %w", err)
			}
			origin := cmp.Or(prompt.CacheThreadOf(e.Extra), e.Thread)
			e.Thread = name
			e.Extra = prompt.WithCacheThread(e.Extra, origin)
			ev = event.Append(nil, &e)
		}
		if err := t.conv.Append(ctx, int64(i+1), ev); err != nil {
			return false, fmt.Errorf("the conversation %q: %w", name, err)
		}
		t.written += int64(len(ev)) + 1
	}
	// What it holds was told where it came from: none of it is handed
	// over as a dead process's.
	if err := idempotency.WriteTold(dir, int64(len(prefix))); err != nil {
		return false, err
	}
	return false, nil
}

// ErrTaken comes from Import when the thread holds a conversation already.
var ErrTaken = errors.New("turn: the thread holds a conversation already")

// Import writes events, a whole conversation whose first event names
// thread, as a new conversation narrowed to only (nil: not narrowed),
// kept as a new conversation is. A thread that holds a conversation
// already is ErrTaken, and nothing is written.
func (r *Runner) Import(ctx context.Context, thread string, events [][]byte, only *tools.Only) error {
	taken, err := r.writeNew(ctx, thread, events, only, false)
	if err == nil && taken {
		err = fmt.Errorf("%w: %q", ErrTaken, thread)
	}
	return err
}

// ToolsOf returns the tools thread was narrowed to, or nil when it never was.
func (r *Runner) ToolsOf(ctx context.Context, thread string) (*tools.Only, error) {
	return r.toolsOf(ctx, thread)
}

// Running returns the threads whose turns run in this process, in no order.
func (r *Runner) Running() []string { return r.locks.Threads() }
