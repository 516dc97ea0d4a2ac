package heldwindow

import (
	"sync"

	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store/event"
)

// slices holds the slices windows are decoded into, emptied, with the
// slice of their items and their tokens. The pool is the process's, never
// an agent's, and the collector empties it.
var slices = sync.Pool{New: func() any { return new(pooled) }}

type pooled struct {
	events []event.Event
	// These hold nothing the collector follows, so they are never cleared.
	items []window.Item
	toks  []int
}

// Held is what one turn holds its window in, from Keep to Give. Its zero
// value holds nothing.
type Held struct {
	Items []window.Item // scratch for the window's items
	Toks  []int         // the tokens of the window's events
	// Whole says the turn may have written past what Keep saw of its
	// slice (it made room in a slice of its own, or failed): Give empties
	// all of it.
	Whole bool

	p *pooled
	// filled is how far into p's events the turn wrote, as Keep saw.
	filled int
	// lent is the last element of a slice lent (Lend), which is never
	// written here, nor given back.
	lent *event.Event
}

// Keep takes a slice from the pool when none is held, and makes events,
// or a larger slice the turn's events grew into, the slice given back;
// it counts how far the turn filled it. A slice lent is not kept.
func (h *Held) Keep(events []event.Event) {
	if h.p == nil {
		h.p = slices.Get().(*pooled)
		h.Items, h.Toks = h.p.items[:0], h.p.toks[:0]
		h.filled, h.Whole, h.lent = 0, false, nil
	}
	if h.IsLent(events) {
		return
	}
	if cap(events) > cap(h.p.events) {
		h.p.events, h.filled = events[:0], 0
	}
	h.filled = max(h.filled, filledTo(h.p.events, events))
}

// Events is the slice held, emptied, to decode a window into. Keep first.
func (h *Held) Events() []event.Event { return h.p.events[:0] }

// Lend says events are another's (the warm conversation's), read in
// place: neither Keep nor Give takes their slice.
func (h *Held) Lend(events []event.Event) {
	h.lent = nil
	if cap(events) > 0 {
		h.lent = &events[:cap(events)][cap(events)-1]
	}
}

// IsLent says whether events are of the slice lent.
func (h *Held) IsLent(events []event.Event) bool {
	return h.lent != nil && cap(events) > 0 && &events[:cap(events)][cap(events)-1] == h.lent
}

// Own is events copied into the slice held, with room for a few more, and
// kept. Keep first.
func (h *Held) Own(events []event.Event) []event.Event {
	mine := h.p.events[:0]
	if n := len(events) + 8; cap(mine) < n {
		mine = make([]event.Event, 0, n+n/4)
	}
	mine = append(mine, events...)
	h.Keep(mine)
	return mine
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

// Give empties what the turn filled of its slice, so it holds no event's
// text, and gives it back with the items' and tokens' slices: a slice
// grown by another conversation's long window costs a short one's turn
// nothing. Nothing of the window may be used after.
func (h *Held) Give() {
	if h.p == nil {
		return
	}
	w := h.p.events[:cap(h.p.events)]
	if !h.Whole {
		w = w[:h.filled]
	}
	clear(w)
	h.p.events = w[:0]
	if cap(h.Items) > cap(h.p.items) {
		h.p.items = h.Items[:0]
	}
	if cap(h.Toks) > cap(h.p.toks) {
		h.p.toks = h.Toks[:0]
	}
	slices.Put(h.p)
	*h = Held{}
}
