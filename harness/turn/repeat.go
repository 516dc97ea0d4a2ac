package turn

import (
	"bytes"
	"context"
	"fmt"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// A message is never asked twice. A message whose id the conversation
// holds, however far back (see ids.go), is the message taken before:
//
//   - answered, its answer (the first after it that calls nothing) is told
//     again, and nothing is written;
//   - not answered, because its turn ended first (a model's 500, a process
//     killed), its turn goes on from what the conversation holds: the
//     message is not written again, the calls whose results are written
//     are not made again, those without one are made, and the model is
//     asked; that answer is the message's.
//
// A message with no id is one with the conversation's last message when
// that has no id either and the same sender id, connection and text: a
// caller that sends again what it got no answer to is told the answer, or
// has its turn go on. Only the last message counts, so the same words sent
// again later ("yes", "ok") are a new message once anything else was said;
// a sender who means the same words twice in a row as two messages gives
// them ids.

// catchUpIDs opens the conversation's id index, or takes it open from the
// turn before in a warm conversation, and adds to it the messages of the
// events it does not hold yet, newest first: those of the turn before,
// after its message, or every event once, for a conversation with no
// index.
func (t *turn) catchUpIDs(ctx context.Context) error {
	x := t.keptIDs()
	if x == nil {
		var err error
		if x, err = openIDs(t.dir); err != nil {
			return err
		}
	}
	t.ids = x
	if x.through > t.last { // the events were cut or replaced: not this conversation's index
		if err := x.reset(); err != nil {
			return err
		}
	}
	if x.through == t.last {
		return nil
	}
	var (
		more    []idEntry
		lastMsg int64
		derr    error
	)
	err := t.conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		if seq <= x.through {
			return false
		}
		t.read += int64(len(ev))
		id, message, err := event.MessageID(ev)
		if err != nil {
			derr = fmt.Errorf("event %d: %w", seq, err)
			return false
		}
		if message {
			lastMsg = max(lastMsg, seq)
			if len(id) > 0 {
				h, err := rawIDHash(id)
				if err != nil {
					derr = fmt.Errorf("event %d: %w", seq, err)
					return false
				}
				more = append(more, idEntry{h, seq})
			}
		}
		return seq > x.through+1
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	if err := x.put(more); err != nil {
		return err
	}
	x.lastMsg = max(x.lastMsg, lastMsg)
	x.setThrough(t.last)
	return nil
}

// rawIDHash is the hash of an id as event.MessageID returns it.
func rawIDHash(raw []byte) (uint64, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return idHash(raw), nil
	}
	id, err := event.UnquoteRaw(raw)
	return idHash(id), err
}

// addID records the message appended at seq in the index. The index is
// derived, so one that cannot be written is let go for the rest of the
// turn, and the next turn adds what it missed.
func (t *turn) addID(id string, seq int64) {
	if t.ids == nil {
		return
	}
	var err error
	if id != "" {
		err = t.ids.add(id, seq)
	} else {
		t.ids.lastMsg = seq
		t.ids.setThrough(seq)
	}
	if err != nil {
		t.log().Warn("id index not written", "error", err)
		t.ids.close()
		t.ids = nil
		t.touched = true // a doubling may have failed halfway
	}
}

// flushIDs records that the index holds every message the turn wrote,
// writing its header while the turn holds the conversation; for an index
// kept open in a warm conversation only once it lags (see idIndex). It
// stays open, to be kept or discarded.
func (t *turn) flushIDs(warm bool) {
	if t.ids == nil {
		return
	}
	t.ids.setThrough(t.last)
	if warm && !t.ids.lags() {
		return
	}
	if err := t.ids.flush(); err != nil {
		t.log().Warn("id index not written", "error", err)
		t.ids.close()
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
		if t.ids.lastMsg == 0 {
			return 0, nil
		}
		var e event.Event
		ok, err := t.eventAt(ctx, t.ids.lastMsg, func(ev []byte) error { return t.dec.Decode(ev, &e) })
		if err != nil || !ok {
			return 0, err
		}
		if e.Type == event.TypeMessage && e.ID == "" && e.From.ID == m.From.ID && e.Connection == m.Connection && e.Text == m.Text {
			return t.ids.lastMsg, nil
		}
		return 0, nil
	}
	seqs, err := t.ids.find(m.ID)
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
	if m.ID != "" && holdsID(events, m.ID) {
		return true, nil
	}
	if t.ids == nil { // no index this turn: the window's last message stands for the conversation's
		if m.ID != "" {
			return false, nil
		}
		for i := len(events) - 1; i >= 0; i-- {
			if e := &events[i]; e.Type == event.TypeMessage {
				return e.ID == "" && e.From.ID == m.From.ID && e.Connection == m.Connection && e.Text == m.Text, nil
			}
		}
		return false, nil
	}
	at, err := t.taken(ctx, m)
	return at != 0, err
}

// unansweredCalls returns the calls of the last answer among events after
// the message at seq that have no result after it: those a turn that ended
// first made and never ran.
func unansweredCalls(events []event.Event, seq int64) []event.Call {
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
