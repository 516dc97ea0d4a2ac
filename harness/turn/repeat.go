package turn

import (
	"context"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/store/event"
)

// onceState is what the turn holds for a message taken once.
type onceState struct {
	ids        *idempotency.Index // the conversation's id index; nil once it could not be written
	resumed    int64              // the seq of the message when a turn that ended first took it: this one goes on from it
	lastAnswer int64              // the seq of the last answer appended that calls nothing: the one told last
}

// A message is never asked twice (see package idempotency): one whose id
// the conversation holds, or the last message sent again without one, is
// the message taken before, told its answer again or its turn gone on
// from where it ended.

// catchUpIDs opens the conversation's id index, or takes it open from the
// turn before in a warm conversation, and adds to it the messages of the
// events it does not hold yet (idempotency.Index.CatchUp).
func (t *turn) catchUpIDs(ctx context.Context) error {
	x := t.warm.kept.TakeIDs()
	if x == nil {
		var err error
		if x, err = idempotency.OpenIndexDeferred(t.dir); err != nil {
			return err
		}
	}
	t.once.ids = x
	read, err := x.CatchUp(ctx, t.conv, t.last)
	t.read += read
	return err
}

// addID records the message appended at seq in the index. The index is
// derived, so one that cannot be written is let go for the rest of the
// turn, and the next turn adds what it missed.
func (t *turn) addID(id string, seq int64) {
	if t.once.ids == nil {
		return
	}
	if err := t.once.ids.Add(id, seq); err != nil {
		t.log().Warn("id index not written", "error", err)
		t.once.ids.Close()
		t.once.ids = nil
		t.warm.touched = true // a doubling may have failed halfway
	}
}

// flushIDs records that the index holds every message the turn wrote,
// writing its header while the turn holds the conversation; for an index
// kept open in a warm conversation only once it lags (see idempotency.Index). It
// stays open, to be kept or discarded.
func (t *turn) flushIDs(kept bool) {
	if t.once.ids == nil {
		return
	}
	t.once.ids.SetThrough(t.last)
	if kept && !t.once.ids.Lags() {
		return
	}
	if err := t.once.ids.Flush(); err != nil {
		t.log().Warn("id index not written", "error", err)
		t.once.ids.Close()
		t.once.ids = nil
		t.warm.touched = true
	}
}

// repeated finds m among the messages taken before. Answered, its answer
// is returned, marked Repeat; taken and not answered, its seq, for its turn
// to go on; never taken, neither.
func (t *turn) repeated(ctx context.Context, m *Message) (Answer, int64, error) {
	if t.last == 0 {
		return Answer{}, 0, nil
	}
	h := t.history()
	at, err := h.Taken(ctx, t.once.ids, sent(m))
	if err != nil || at == 0 {
		return Answer{}, 0, err
	}
	seq, e, err := h.AnswerAfter(ctx, at)
	if err != nil || seq == 0 {
		return Answer{}, at, err
	}
	return Answer{Thread: t.thread, Seq: seq, Text: e.Text, Usage: e.Usage, Repeat: true, Ended: ending.Marked(&e)}, 0, nil
}

// seenBefore says whether a message steering the turn, whose window holds
// events, was taken before: its turn is its own, which finds it.
func (t *turn) seenBefore(ctx context.Context, m *Message, events []event.Event) (bool, error) {
	return t.history().SeenBefore(ctx, t.once.ids, sent(m), events)
}

// history is the conversation as the turn reads it for package
// idempotency's rules.
func (t *turn) history() idempotency.History {
	return idempotency.History{Conv: t.conv, Last: t.last, Dec: &t.dec, Read: &t.read}
}

// sent is m as package idempotency tells one message from another.
func sent(m *Message) idempotency.Sent {
	return idempotency.Sent{ID: m.ID, From: m.From.ID, Connection: m.Connection, Text: m.Text}
}
