package turn

import (
	"context"
	"sync"

	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// maxWindowRead bounds how much of a conversation one turn reads back,
// whatever the window: a window of tokens is at most about this many bytes.
const maxWindowRead = 64 << 20

// windowSlices holds the slices windows are decoded into, emptied, so a turn
// does not grow a new one of several hundred bytes an event each time. The
// pool is the process's, never an agent's, and the collector empties it.
var windowSlices = sync.Pool{New: func() any { return new([]event.Event) }}

// keepWindow makes events, or a larger slice the turn's events grew into,
// the slice its turn gives back when it ends.
func (t *turn) keepWindow(events []event.Event) {
	if t.window == nil {
		t.window = windowSlices.Get().(*[]event.Event)
	}
	if cap(events) > cap(*t.window) {
		*t.window = events[:0]
	}
}

// giveWindow empties the turn's window slice, so it holds no event's text,
// and gives it back. Nothing of the window may be used after.
func (t *turn) giveWindow() {
	if t.window == nil {
		return
	}
	w := (*t.window)[:cap(*t.window)]
	clear(w)
	*t.window = w[:0]
	windowSlices.Put(t.window)
	t.window = nil
}

// readWindow reads the tail the window needs, newest first, back to the
// latest checkpoint's start (or the first event), and returns the window's
// events oldest first with where it starts. It stops early once what it has
// read is more than the share, since a window never reaches further back.
func (t *turn) readWindow(ctx context.Context, share int) ([]event.Event, window.Checkpoint, error) {
	t.keepWindow(nil)
	var (
		events = (*t.window)[:0]
		cp     = window.Checkpoint{Start: 1}
		toks   []int // each event's tokens, counted once
		found  bool
		tokens int
		bytes  int
		derr   error
	)
	err := t.conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		bytes += len(ev)
		events = append(events, event.Event{})
		e := &events[len(events)-1]
		if derr = t.dec.Decode(ev, e); derr != nil {
			return false
		}
		if !found && e.Window != nil && (e.Type == event.TypeAnswer || e.Type == event.TypeSummary) {
			cp, found = window.Checkpoint{Start: e.Window.Start, TokensBefore: e.Window.TokensBefore}, true
		}
		tok := eventTokens(e)
		toks = append(toks, tok)
		tokens += tok
		if found && seq <= cp.Start {
			return false
		}
		if tokens > 2*share+1 || bytes > maxWindowRead {
			if !found {
				cp = window.Checkpoint{Start: seq} // the tokens before it are not known without reading them
			}
			return false
		}
		return true
	})
	t.keepWindow(events)
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, cp, err
	}
	// Oldest first, from the checkpoint's start.
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
		toks[i], toks[j] = toks[j], toks[i]
	}
	for len(events) > 0 && events[0].Seq < cp.Start {
		events, toks = events[1:], toks[1:]
	}
	items := make([]window.Item, len(events))
	for i := range events {
		items[i] = window.Item{Seq: events[i].Seq, Tokens: toks[i], CanStart: events[i].Type == event.TypeMessage}
	}
	next := window.Start(cp, items, share)
	for len(events) > 0 && events[0].Seq < next.Start {
		events = events[1:]
	}
	return events, next, nil
}

// eventTokens is an event's rough share of the prompt.
func eventTokens(e *event.Event) int {
	n := window.Tokens(e.Head) + window.Tokens(e.Text) + len(e.Thinking)/4
	for _, c := range e.Calls {
		n += window.Tokens(c.Name) + len(c.Args)/4
	}
	return n + 4
}
