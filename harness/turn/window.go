package turn

import (
	"context"
	"slices"

	"lnk.dev/linkharness/harness/internal/heldwindow"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// windowState is the window as the turn holds it: its slices (given back
// when the turn ends), and the seqs of the first and the last of the
// events their tokens count (tokensOf).
type windowState struct {
	heldwindow.Held
	first, last int64
}

// maxWindowRead bounds how much of a conversation one turn reads back,
// whatever the window: a window of tokens is at most about this many bytes.
const maxWindowRead = 64 << 20

// readWindow reads the tail the window needs, newest first, back to the
// latest checkpoint's start (or the first event), and returns the window's
// events oldest first with where it starts. It stops early once what it has
// read is more than the share, since a window never reaches further back.
// The events the turn's warm.Conv kept are read in place of the store's when
// they reach back as far: the same steps find the same window.
func (t *turn) readWindow(ctx context.Context, share int) ([]event.Event, window.Checkpoint, error) {
	t.win.Keep(nil)
	t.win.Lend(nil)
	var (
		events = t.win.Events()
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
			// The kept events themselves, not a copy: the turn only reads
			// them, and what it appends the conversation kept gets too
			// (extend).
			log, toks = t.warm.kept.KeepFrom(max(stop, 0))
			t.win.Lend(log)
			return t.windowFrom(log, toks, cp, share)
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
	t.win.Keep(events)
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
	t.win.Items = window.Items(t.win.Items, events, toks)
	if window.Rearranges(cp.Start, t.win.Items) && t.win.IsLent(events) {
		events = t.win.Own(events) // rearranged in the turn's own slice
	}
	events, items := window.Opened(cp.Start, events, t.win.Items)
	next := window.Start(cp, items, share)
	if next.Start != cp.Start && len(events) > 0 && events[0].Type == event.TypeSummary {
		events, items = events[1:], items[1:] // the window moved past its summary: it starts bare
	}
	for len(events) > 0 && events[0].Seq < next.Start {
		events, items = events[1:], items[1:]
	}
	t.win.Toks = slices.Grow(t.win.Toks[:0], len(items)+16) // and room for what the turn adds
	for _, it := range items {
		t.win.Toks = append(t.win.Toks, it.Tokens)
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
	n := len(t.win.Toks)
	if len(events) == 0 || n > len(events) || events[0].Seq != t.win.first || (n > 0 && events[n-1].Seq != t.win.last) {
		t.win.Toks, n = t.win.Toks[:0], 0
	}
	for i := n; i < len(events); i++ {
		t.win.Toks = append(t.win.Toks, prompt.EventTokens(&events[i]))
	}
	if len(events) > 0 {
		t.win.first, t.win.last = events[0].Seq, events[len(events)-1].Seq
	}
	return t.win.Toks[:len(events)]
}

// extend is events with es after them, es the events the turn just
// appended. Where events are the warm conversation's, which it extended
// with es as read back from the store (warm.Conv.Add), they are those;
// else es are appended, in a slice of the turn's own where events are
// the conversation's.
func (t *turn) extend(events []event.Event, es ...event.Event) []event.Event {
	if !t.win.IsLent(events) {
		return append(events, es...)
	}
	n, k := len(events), len(es)
	if log, _, _ := t.warm.kept.Events(t.last); len(log) >= k && n+k <= cap(events) {
		ext := events[:n+k]
		if &log[len(log)-1] == &ext[n+k-1] && sameSeqs(ext[n:], es) {
			return ext
		}
	}
	return append(t.win.Own(events), es...)
}

// sameSeqs says whether a and b are events of the same seqs, in order.
func sameSeqs(a, b []event.Event) bool {
	return slices.EqualFunc(a, b, func(x, y event.Event) bool { return x.Seq == y.Seq })
}
