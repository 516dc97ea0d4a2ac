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
	return read, nil
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
