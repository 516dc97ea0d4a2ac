package turn

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// ErrBadFork comes when a fork cannot be made as asked (see package fork):
// before is not an owner message of the conversation, or the new thread is
// taken. Nothing is written.
var ErrBadFork = errors.New("turn: bad fork")

// WriteNew writes events as the new conversation of name, narrowed to
// only, holding it as a turn does, and says whether it was taken (then
// nothing is written). With rename, the first event is made to name the
// new thread; else it is written as it is. A fork and ASP's import write
// through it.
func (r *Runner) WriteNew(ctx context.Context, name string, prefix [][]byte, only *tools.Only, rename bool) (taken bool, err error) {
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
	taken, err := r.WriteNew(ctx, thread, events, only, false)
	if err == nil && taken {
		err = fmt.Errorf("%w: %q", ErrTaken, thread)
	}
	return err
}

// ToolsOf returns the tools thread was narrowed to, kept by its store or in
// tools.json, or nil when it never was.
func (r *Runner) ToolsOf(ctx context.Context, thread string) (*tools.Only, error) {
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

// Running returns the threads whose turns run in this process, in no order.
func (r *Runner) Running() []string { return r.locks.Threads() }
