package warm

import (
	"slices"

	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/store/event"
)

// events are a conversation's events from log[0].Seq through the last, in
// the log's order, as decoded from the store; size and toks are each one's
// bytes there and tokens (prompt.EventTokens).
type events struct {
	log  []event.Event
	size []int
	toks []int
}

// Events returns the events kept, with each one's bytes in the store and
// tokens, when they end with the event at last, the conversation's last
// seq; else none. They are c's: the caller reads them, and keeps them with
// KeepFrom.
func (c *Conv) Events(last int64) ([]event.Event, []int, []int) {
	if c == nil {
		return nil, nil, nil
	}
	e := &c.events
	if len(e.log) == 0 || e.log[len(e.log)-1].Seq != last {
		return nil, nil, nil
	}
	return e.log, e.size, e.toks
}

// KeepFrom keeps the events kept from the i-th on, those the window
// reaches back to, and returns them with their tokens. Once most of them
// left the window, the memory of what left goes.
func (c *Conv) KeepFrom(i int) ([]event.Event, []int) {
	e := &c.events
	e.log, e.size, e.toks = e.log[i:], e.size[i:], e.toks[i:]
	if i > len(e.log) {
		e.log, e.size, e.toks = slices.Clone(e.log), slices.Clone(e.size), slices.Clone(e.toks)
	}
	return e.log, e.toks
}

// KeepEvents keeps a copy of log, events read from the store, in the
// log's order, with each one's bytes there (sizes, kept as given) and
// tokens.
func (c *Conv) KeepEvents(log []event.Event, sizes, toks []int) {
	if c == nil {
		return
	}
	c.events = events{log: slices.Clone(log), size: sizes, toks: slices.Clone(toks)}
}

// Add adds the event the turn just appended, b, to the events kept,
// decoded by dec from its bytes as a read would decode them, when they end
// with the event before it; else none is kept.
func (c *Conv) Add(dec *event.Decoder, b []byte) {
	if c == nil || len(c.events.log) == 0 {
		return
	}
	k := &c.events
	var e event.Event
	if err := dec.Decode(b, &e); err != nil || e.Seq != k.log[len(k.log)-1].Seq+1 {
		*k = events{}
		return
	}
	k.log = append(k.log, e)
	k.size = append(k.size, len(b))
	k.toks = append(k.toks, prompt.EventTokens(&e))
}
