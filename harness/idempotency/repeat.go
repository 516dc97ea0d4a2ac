package idempotency

import (
	"bytes"
	"context"
	"fmt"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// CatchUp adds to the index the messages of conv's events it does not
// hold yet, through last, the conversation's last seq, newest first:
// those of the turn before, after its message, or every event once, for a
// conversation with no index. An index that holds more than the
// conversation (its events were cut or replaced) is emptied first: it is
// not this conversation's. It returns the bytes of the events it read.
func (x *Index) CatchUp(ctx context.Context, conv store.Conversation, last int64) (int64, error) {
	if x.through > last {
		if err := x.Reset(); err != nil {
			return 0, err
		}
	}
	if x.through == last {
		return 0, nil
	}
	var (
		more    []entry
		lastMsg int64
		read    int64
		derr    error
	)
	err := conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		if seq <= x.through {
			return false
		}
		read += int64(len(ev))
		id, message, err := event.MessageID(ev)
		if err != nil {
			derr = fmt.Errorf("event %d: %w", seq, err)
			return false
		}
		if message {
			lastMsg = max(lastMsg, seq)
			if len(id) > 0 {
				h, err := rawHash(id)
				if err != nil {
					derr = fmt.Errorf("event %d: %w", seq, err)
					return false
				}
				more = append(more, entry{h, seq})
			}
		}
		return seq > x.through+1
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return read, err
	}
	if err := x.put(more); err != nil {
		return read, err
	}
	x.lastMsg = max(x.lastMsg, lastMsg)
	x.SetThrough(last)
	return read, x.grown()
}

// rawHash is the hash of an id as event.MessageID returns it.
func rawHash(raw []byte) (uint64, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return hash(raw), nil
	}
	id, err := event.UnquoteRaw(raw)
	return hash(id), err
}

// SentAgain says whether e is the message a message with no id sent again
// is: a message with no id either, from the same sender id, on the same
// connection, with the same text.
func SentAgain(e *event.Event, from, connection, text string) bool {
	return e.Type == event.TypeMessage && e.ID == "" && e.From.ID == from && e.Connection == connection && e.Text == text
}

// Holds says whether events hold a message with id.
func Holds(events []event.Event, id string) bool {
	for i := range events {
		if events[i].Type == event.TypeMessage && events[i].ID == id {
			return true
		}
	}
	return false
}

// Unanswered returns the calls of the last answer among events after the
// message at seq that have no result after it: those a turn that ended
// first made and never ran.
func Unanswered(events []event.Event, seq int64) []event.Call {
	for i := len(events) - 1; i >= 0 && events[i].Seq > seq; i-- {
		e := &events[i]
		if e.Type != event.TypeAnswer {
			continue
		}
		var out []event.Call
		for _, c := range e.Calls {
			if !hasResult(events[i+1:], c.ID) {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

func hasResult(events []event.Event, callID string) bool {
	for i := range events {
		if events[i].Type == event.TypeResult && events[i].CallID == callID {
			return true
		}
	}
	return false
}

// Sent is a message as sent, what tells it from another: its id, and for
// one without, its sender's id, its connection and its text.
type Sent struct {
	ID, From, Connection, Text string
}

// History is a conversation as the turn that holds it reads it for these
// rules: its events through Last, decoded with the turn's decoder, and
// the turn's count of the bytes it read, added to.
type History struct {
	Conv store.Conversation
	Last int64
	Dec  *event.Decoder
	Read *int64
}

// Taken returns the seq of the message m is, or 0: for an id, the message
// carrying it, found in x; without one, the conversation's last message
// when it is the same (SentAgain). With no index (x nil), none.
func (h History) Taken(ctx context.Context, x *Index, m Sent) (int64, error) {
	if x == nil {
		return 0, nil
	}
	if m.ID == "" {
		if x.LastMsg() == 0 {
			return 0, nil
		}
		var e event.Event
		ok, err := h.EventAt(ctx, x.LastMsg(), func(ev []byte) error { return h.Dec.Decode(ev, &e) })
		if err != nil || !ok {
			return 0, err
		}
		if SentAgain(&e, m.From, m.Connection, m.Text) {
			return x.LastMsg(), nil
		}
		return 0, nil
	}
	seqs, err := x.Find(m.ID)
	if err != nil {
		return 0, err
	}
	for _, seq := range seqs { // a hash found is checked: a collision or a stale slot is not the message
		if seq < 1 || seq > h.Last {
			continue
		}
		is := false
		ok, err := h.EventAt(ctx, seq, func(ev []byte) error {
			id, message, err := event.MessageID(ev)
			is = message && event.RawIs(id, m.ID)
			return err
		})
		if err != nil {
			return 0, err
		}
		if ok && is {
			return seq, nil
		}
	}
	return 0, nil
}

// EventAt hands the event at seq to fn, and says whether there was one.
func (h History) EventAt(ctx context.Context, seq int64, fn func([]byte) error) (bool, error) {
	var (
		found bool
		ferr  error
	)
	err := h.Conv.Read(ctx, seq, store.Forward, func(s int64, ev []byte) bool {
		*h.Read += int64(len(ev))
		if s == seq {
			found, ferr = true, fn(ev)
		}
		return false
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return false, fmt.Errorf("event %d: %w", seq, err)
	}
	return found, nil
}

// AnswerAfter returns the first answer after seq that calls no tool, the
// one its message was told, and its seq: 0 when none was written.
func (h History) AnswerAfter(ctx context.Context, seq int64) (int64, event.Event, error) {
	var (
		at  int64
		e   event.Event
		err error
	)
	rerr := h.Conv.Read(ctx, seq+1, store.Forward, func(seq int64, ev []byte) bool {
		*h.Read += int64(len(ev))
		if err = h.Dec.Decode(ev, &e); err != nil {
			return false
		}
		if e.Type == event.TypeAnswer && len(e.Calls) == 0 {
			at = seq
			return false
		}
		return true
	})
	if rerr != nil {
		return 0, event.Event{}, rerr
	}
	return at, e, err
}

// SeenBefore says whether m, a message steering a running turn whose
// window holds events, was taken before: its turn is its own, which finds
// it. With no index (x nil), the window's last message stands for the
// conversation's.
func (h History) SeenBefore(ctx context.Context, x *Index, m Sent, window []event.Event) (bool, error) {
	if m.ID != "" && Holds(window, m.ID) {
		return true, nil
	}
	if x == nil {
		if m.ID != "" {
			return false, nil
		}
		for i := len(window) - 1; i >= 0; i-- {
			if e := &window[i]; e.Type == event.TypeMessage {
				return SentAgain(e, m.From, m.Connection, m.Text), nil
			}
		}
		return false, nil
	}
	at, err := h.Taken(ctx, x, m)
	return at != 0, err
}
