package window

import (
	"slices"

	"lnk.dev/linkharness/store/event"
)

// Items is events as the window sees them, toks their tokens, one each,
// in dst's memory when it has room.
func Items(dst []Item, events []event.Event, toks []int) []Item {
	items := slices.Grow(dst[:0], len(events))[:len(events)]
	for i := range events {
		e := &events[i]
		items[i] = Item{Seq: e.Seq, Tokens: toks[i], CanStart: e.Type == event.TypeMessage,
			Ends: e.Type == event.TypeAnswer && len(e.Calls) == 0}
		if e.Type == event.TypeSummary {
			items[i].Through = max(e.Through, 1) // a summary is never taken for another event
		}
	}
	return items
}

// Rearranges says whether Opened rearranges the window starting at start
// whose items are items: it moves a summary first, or leaves one out.
// Where it does not, Opened writes nothing, so it may be given events it
// must not write.
func Rearranges(start int64, items []Item) bool {
	for i := range items {
		if items[i].Through != 0 && (i > 0 || items[0].Through != start-1) {
			return true
		}
	}
	return false
}

// Opened puts the summary that opens a window starting at start (see
// Opening) first, as the model sees it, and leaves out every other
// summary: one covers what left before start, or is one the window moved
// past. events and items are the window's from start on, in the log's
// order; they are rearranged in place (see Rearranges).
func Opened(start int64, events []event.Event, items []Item) ([]event.Event, []Item) {
	if op := Opening(start, items); op > 0 {
		s, it := events[op], items[op]
		copy(events[1:op+1], events[:op])
		copy(items[1:op+1], items[:op])
		events[0], items[0] = s, it
	}
	k := 0
	for i := range events {
		if events[i].Type == event.TypeSummary && (i > 0 || items[0].Through != start-1) {
			continue
		}
		if k != i {
			events[k], items[k] = events[i], items[i]
		}
		k++
	}
	clear(events[k:])
	return events[:k], items[:k]
}
