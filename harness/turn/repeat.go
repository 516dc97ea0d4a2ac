package turn

import (
	"context"
	"fmt"

	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// A message is never asked twice (see package idempotency): one whose id
// the conversation holds, or the last message sent again without one, is
// the message taken before, told its answer again or its turn gone on
// from where it ended.

// catchUpIDs opens the conversation's id index, or takes it open from the
// turn before in a warm conversation, and adds to it the messages of the
// events it does not hold yet (idempotency.Index.CatchUp).
func (t *turn) catchUpIDs(ctx context.Context) error {
	x := t.warm.TakeIDs()
	if x == nil {
		var err error
		if x, err = idempotency.OpenIndex(t.dir); err != nil {
			return err
		}
	}
	t.ids = x
	read, err := x.CatchUp(ctx, t.conv, t.last)
	t.read += read
	return err
}

// addID records the message appended at seq in the index. The index is
// derived, so one that cannot be written is let go for the rest of the
// turn, and the next turn adds what it missed.
func (t *turn) addID(id string, seq int64) {
	if t.ids == nil {
		return
	}
	if err := t.ids.Add(id, seq); err != nil {
		t.log().Warn("id index not written", "error", err)
		t.ids.Close()
		t.ids = nil
		t.touched = true // a doubling may have failed halfway
	}
}

// flushIDs records that the index holds every message the turn wrote,
// writing its header while the turn holds the conversation; for an index
// kept open in a warm conversation only once it lags (see idempotency.Index). It
// stays open, to be kept or discarded.
func (t *turn) flushIDs(warm bool) {
	if t.ids == nil {
		return
	}
	t.ids.SetThrough(t.last)
	if warm && !t.ids.Lags() {
		return
	}
	if err := t.ids.Flush(); err != nil {
		t.log().Warn("id index not written", "error", err)
		t.ids.Close()
		t.ids = nil
		t.touched = true
	}
}

// repeated finds m among the messages taken before. Answered, its answer
// is returned, marked Repeat; taken and not answered, its seq, for its turn
// to go on; never taken, neither.
func (t *turn) repeated(ctx context.Context, m *Message) (Answer, int64, error) {
	if t.last == 0 {
		return Answer{}, 0, nil
	}
	at, err := t.taken(ctx, m)
	if err != nil || at == 0 {
		return Answer{}, 0, err
	}
	a, err := t.answerAfter(ctx, at)
	if err != nil || a.Seq == 0 {
		return Answer{}, at, err
	}
	return a, 0, nil
}

// taken returns the seq of the message m is, or 0: for an id, the message
// carrying it; without one, the conversation's last message when it is the
// same (see above).
func (t *turn) taken(ctx context.Context, m *Message) (int64, error) {
	if t.ids == nil {
		return 0, nil
	}
	if m.ID == "" {
		if t.ids.LastMsg() == 0 {
			return 0, nil
		}
		var e event.Event
		ok, err := t.eventAt(ctx, t.ids.LastMsg(), func(ev []byte) error { return t.dec.Decode(ev, &e) })
		if err != nil || !ok {
			return 0, err
		}
		if idempotency.SentAgain(&e, m.From.ID, m.Connection, m.Text) {
			return t.ids.LastMsg(), nil
		}
		return 0, nil
	}
	seqs, err := t.ids.Find(m.ID)
	if err != nil {
		return 0, err
	}
	for _, seq := range seqs { // a hash found is checked: a collision or a stale slot is not the message
		if seq < 1 || seq > t.last {
			continue
		}
		is := false
		ok, err := t.eventAt(ctx, seq, func(ev []byte) error {
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

// eventAt hands the event at seq to fn, and says whether there was one.
func (t *turn) eventAt(ctx context.Context, seq int64, fn func([]byte) error) (bool, error) {
	var (
		found bool
		ferr  error
	)
	err := t.conv.Read(ctx, seq, store.Forward, func(s int64, ev []byte) bool {
		t.read += int64(len(ev))
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

// answerAfter returns the first answer after seq that calls no tool: the
// one its message was told. None written, the Answer is zero.
func (t *turn) answerAfter(ctx context.Context, seq int64) (Answer, error) {
	var (
		a   Answer
		e   event.Event
		err error
	)
	rerr := t.conv.Read(ctx, seq+1, store.Forward, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		if err = t.dec.Decode(ev, &e); err != nil {
			return false
		}
		if e.Type == event.TypeAnswer && len(e.Calls) == 0 {
			a = Answer{Thread: t.thread, Seq: seq, Text: e.Text, Usage: e.Usage, Repeat: true, Ended: Ended(&e)}
			return false
		}
		return true
	})
	if rerr != nil {
		return Answer{}, rerr
	}
	return a, err
}

// seenBefore says whether a message steering the turn was taken before:
// its turn is its own, which finds it.
func (t *turn) seenBefore(ctx context.Context, m *Message, events []event.Event) (bool, error) {
	if m.ID != "" && idempotency.Holds(events, m.ID) {
		return true, nil
	}
	if t.ids == nil { // no index this turn: the window's last message stands for the conversation's
		if m.ID != "" {
			return false, nil
		}
		for i := len(events) - 1; i >= 0; i-- {
			if e := &events[i]; e.Type == event.TypeMessage {
				return idempotency.SentAgain(e, m.From.ID, m.Connection, m.Text), nil
			}
		}
		return false, nil
	}
	at, err := t.taken(ctx, m)
	return at != 0, err
}
