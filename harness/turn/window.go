package turn

import (
	"context"
	"slices"
	"sync"

	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// windowState is the window as the turn holds it.
type windowState struct {
	slice *windowSlice  // the slices the window is decoded into, given back when the turn ends
	toks  []int         // the tokens of the window's events (tokensOf)
	first int64         // the seq of the window's first event they count
	last  int64         // and of the last
	items []window.Item // scratch for the window's items, given back with the window's slice
	// filled is how far into slice's events the turn wrote, as keepWindow
	// saw; all of it when the turn may have written past what it saw.
	filled int
	whole  bool
}

// maxWindowRead bounds how much of a conversation one turn reads back,
// whatever the window: a window of tokens is at most about this many bytes.
const maxWindowRead = 64 << 20

// windowSlices holds the slices windows are decoded into, emptied, so a turn
// does not grow a new one of several hundred bytes an event each time, with
// the slice of their items. The pool is the process's, never an agent's, and
// the collector empties it.
var windowSlices = sync.Pool{New: func() any { return new(windowSlice) }}

type windowSlice struct {
	events []event.Event
	// These hold nothing the collector follows, so they are never cleared.
	items []window.Item
	toks  []int
}

// keepWindow makes events, or a larger slice the turn's events grew into,
// the slice its turn gives back when it ends, and counts how far the turn
// filled it.
func (t *turn) keepWindow(events []event.Event) {
	if t.win.slice == nil {
		t.win.slice = windowSlices.Get().(*windowSlice)
		t.win.items, t.win.toks = t.win.slice.items[:0], t.win.slice.toks[:0]
		t.win.filled, t.win.whole = 0, false
	}
	if cap(events) > cap(t.win.slice.events) {
		t.win.slice.events, t.win.filled = events[:0], 0
	}
	t.win.filled = max(t.win.filled, filledTo(t.win.slice.events, events))
}

// filledTo is how far into slice events reaches: the turn's events are
// its slice less the oldest (a window starts later) and more at its end
// (the turn appends), so they end as far into it as cap says, when they
// are of it at all.
func filledTo(slice, events []event.Event) int {
	n, m := cap(slice), cap(events)
	if m == 0 || m > n || &slice[:n][n-1] != &events[:m][m-1] {
		return 0
	}
	return n - m + len(events)
}

// giveWindow empties what the turn filled of its window slice, so it holds
// no event's text, and gives it back with the items' slice: a slice grown
// by another conversation's long window costs a short one's turn nothing.
// Nothing of the window may be used after.
func (t *turn) giveWindow() {
	if t.win.slice == nil {
		return
	}
	w := t.win.slice.events[:cap(t.win.slice.events)]
	if !t.win.whole {
		w = w[:t.win.filled]
	}
	clear(w)
	t.win.slice.events = w[:0]
	if cap(t.win.items) > cap(t.win.slice.items) {
		t.win.slice.items = t.win.items[:0]
	}
	if cap(t.win.toks) > cap(t.win.slice.toks) {
		t.win.slice.toks = t.win.toks[:0]
	}
	windowSlices.Put(t.win.slice)
	t.win.slice, t.win.items, t.win.toks = nil, nil, nil
}

// readWindow reads the tail the window needs, newest first, back to the
// latest checkpoint's start (or the first event), and returns the window's
// events oldest first with where it starts. It stops early once what it has
// read is more than the share, since a window never reaches further back.
// The events the turn's warm.Conv kept are read in place of the store's when
// they reach back as far: the same steps find the same window.
func (t *turn) readWindow(ctx context.Context, share int) ([]event.Event, window.Checkpoint, error) {
	t.keepWindow(nil)
	var (
		events = t.win.slice.events[:0]
		cp     = window.Checkpoint{Start: 1}
		toks   []int // each event's tokens, counted once
		sizes  []int // and its bytes in the store
		found  bool
		tokens int
		bytes  int
	)
	// more takes e, the next event back, and says whether the window may
	// reach further back.
	more := func(e *event.Event, size, tok int) bool {
		bytes += size
		if !found && e.Window != nil && (e.Type == event.TypeAnswer || e.Type == event.TypeSummary) {
			cp, found = window.Checkpoint{Start: e.Window.Start, TokensBefore: e.Window.TokensBefore}, true
		}
		tokens += tok
		if found && e.Seq <= cp.Start {
			return false
		}
		if tokens > 2*share+1 || bytes > maxWindowRead {
			if !found {
				cp = window.Checkpoint{Start: e.Seq} // the tokens before it are not known without reading them
			}
			return false
		}
		return true
	}
	if log, size, toks := t.warm.kept.Events(t.last); len(log) > 0 {
		// The events kept reach back as far when the same steps stop among
		// them, or they begin with the conversation.
		stop := -1
		for i := len(log) - 1; i >= 0; i-- {
			if !more(&log[i], size[i], toks[i]) {
				stop = i
				break
			}
		}
		if stop >= 0 || log[0].Seq == 1 {
			log, toks = t.warm.kept.KeepFrom(max(stop, 0))
			if n := len(log) + 8; cap(events) < n { // the turn adds a few
				events = make([]event.Event, 0, n+n/4) // and the next turns a few more
			}
			events = append(events, log...)
			t.keepWindow(events)
			return t.windowFrom(events, toks, cp, share)
		}
		cp, found, tokens, bytes = window.Checkpoint{Start: 1}, false, 0, 0
	}
	var derr error
	err := t.conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		events = append(events, event.Event{})
		e := &events[len(events)-1]
		if derr = t.dec.Decode(ev, e); derr != nil {
			return false
		}
		tok := prompt.EventTokens(e)
		toks = append(toks, tok)
		if t.warm.kept != nil {
			sizes = append(sizes, len(ev))
		}
		return more(e, len(ev), tok)
	})
	t.keepWindow(events)
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, cp, err
	}
	return t.windowRead(events, toks, sizes, cp, share)
}

// windowRead is windowFrom of events read newest first, kept warm; apart
// from readWindow, whose frame is under every read, as reversing copies one.
func (t *turn) windowRead(events []event.Event, toks, sizes []int, cp window.Checkpoint, share int) ([]event.Event, window.Checkpoint, error) {
	// Oldest first, from the checkpoint's start.
	slices.Reverse(events)
	slices.Reverse(toks)
	for len(events) > 0 && events[0].Seq < cp.Start {
		events, toks = events[1:], toks[1:]
	}
	if t.warm.kept != nil { // kept, in the log's order, for the next turn
		slices.Reverse(sizes)
		t.warm.kept.KeepEvents(events, sizes[len(sizes)-len(events):], toks)
	}
	return t.windowFrom(events, toks, cp, share)
}

// windowFrom is the window among events, the log's from the latest
// checkpoint cp's start (or as far back as was read), oldest first, toks
// their tokens: what opens it put first, and where it starts for share.
func (t *turn) windowFrom(events []event.Event, toks []int, cp window.Checkpoint, share int) ([]event.Event, window.Checkpoint, error) {
	for len(events) > 0 && events[0].Seq < cp.Start {
		events, toks = events[1:], toks[1:]
	}
	t.win.items = window.Items(t.win.items, events, toks)
	events, items := window.Opened(cp.Start, events, t.win.items)
	next := window.Start(cp, items, share)
	if next.Start != cp.Start && len(events) > 0 && events[0].Type == event.TypeSummary {
		events, items = events[1:], items[1:] // the window moved past its summary: it starts bare
	}
	for len(events) > 0 && events[0].Seq < next.Start {
		events, items = events[1:], items[1:]
	}
	t.win.toks = slices.Grow(t.win.toks[:0], len(items)+16) // and room for what the turn adds
	for _, it := range items {
		t.win.toks = append(t.win.toks, it.Tokens)
	}
	if len(events) > 0 {
		t.win.first, t.win.last = events[0].Seq, events[len(events)-1].Seq
	}
	return events, next, nil
}

// tokensOf is each of events' tokens, events the window as the turn holds
// it: those of the events readWindow gave counted when it read them, of
// those added since once. A window made anew (room made between rounds)
// is counted afresh.
func (t *turn) tokensOf(events []event.Event) []int {
	n := len(t.win.toks)
	if len(events) == 0 || n > len(events) || events[0].Seq != t.win.first || (n > 0 && events[n-1].Seq != t.win.last) {
		t.win.toks, n = t.win.toks[:0], 0
	}
	for i := n; i < len(events); i++ {
		t.win.toks = append(t.win.toks, prompt.EventTokens(&events[i]))
	}
	if len(events) > 0 {
		t.win.first, t.win.last = events[0].Seq, events[len(events)-1].Seq
	}
	return t.win.toks[:len(events)]
}
