package turn

import (
	"context"
	"fmt"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// The append step: every event a turn writes goes through put, which gives
// it the conversation's next seq, writes it, and hands it to what the turn
// keeps for the next (see warm.go).

// appendEvent appends e durably, and with it the message appended
// deferred before it, if any.
func (t *turn) appendEvent(ctx context.Context, e *event.Event) error {
	return t.put(ctx, e, false)
}

// put appends e: durably with the conversation's Append, or, when
// deferred and the store can (store.Deferred), with its AppendDeferred.
func (t *turn) put(ctx context.Context, e *event.Event, deferred bool) error {
	e.Seq = t.last + 1
	if t.last == 0 {
		e.Thread = t.thread
	}
	t.buf = event.Append(t.buf[:0], e)
	add := t.conv.Append
	if d, ok := t.conv.(store.Deferred); ok && deferred {
		add = d.AppendDeferred
	} else {
		deferred = false
	}
	sp := t.appendSpan(e.Seq, len(t.buf), !deferred)
	err := add(ctx, e.Seq, t.buf)
	sp.End(err)
	if err != nil {
		t.dropWarm()
		return err
	}
	t.written += int64(len(t.buf)) + 1
	t.last = e.Seq
	if e.Seq == 1 { // what open reads of the first event, for the next turn
		t.warm.kept.SetFirst(e.Connection, prompt.CacheThreadOf(e.Extra))
	}
	t.warm.kept.Add(&t.dec, t.buf)
	if cap(t.buf) > keepLine {
		t.buf = nil // not held while the model is asked
	}
	return nil
}

// keepLine is the most a turn keeps of the buffer it encodes its events
// in between two of them: a longer one, made for a long message, is not
// held through the model's call that follows it.
const keepLine = 16 << 10

// appendMessage appends the message with its head, written before the
// model is asked, and its event to *to unless nil (a copy returned would
// be in the caller's frame). Where the store can (store.Deferred), it is
// made durable by the sync of the next event, the answer or the answer
// calling tools, which is made durable before any tool runs: one sync for
// both. It is told to nobody before then, so a crash that loses it loses
// no acknowledged event, and the caller's retry (the same message id)
// writes it again as one message.
func (t *turn) appendMessage(ctx context.Context, m *Message, to *[]event.Event) error {
	now := t.r.now()
	var e event.Event // set field by field: a literal is built in a copy on the stack first
	e.Time, e.Type, e.ID, e.From, e.Owner = now, event.TypeMessage, m.ID, m.From, m.Owner
	e.Connection, e.Text = m.Connection, m.Text
	e.Head = prompt.Head(now.Local(), m.Connection, prompt.Speaker{Name: m.From.Name, Owner: m.Owner, ID: m.From.ID})
	if err := t.put(ctx, &e, true); err != nil {
		return err
	}
	t.seq = e.Seq
	t.addID(m.ID, e.Seq)
	if to != nil {
		*to = t.extend(*to, e)
	}
	return nil
}

// appendAgain appends the message at seq, the conversation's last, again
// with its own bytes, which makes it durable before the turn goes on from
// it. It was written and maybe never made durable: deferred by a process
// that died before its answer, or left by an answer's failed sync whose
// cut failed too, readable and not on the disk, which no later sync
// writes unless it is written again. A store takes the same bytes again
// at a taken seq as success, and writes them again over themselves. Only
// the last event is written again: the sync of an event after a message
// made it durable too (store.Deferred).
func (t *turn) appendAgain(ctx context.Context, seq int64) error {
	if seq != t.last {
		return nil
	}
	var again []byte
	if _, err := t.history().EventAt(ctx, seq, func(ev []byte) error { again = append(again, ev...); return nil }); err != nil {
		return err
	}
	if again == nil {
		return nil
	}
	return t.conv.Append(ctx, seq, again)
}

// appendAnswer appends the model's answer with what the provider reported
// and the window's checkpoint.
func (t *turn) appendAnswer(ctx context.Context, s *settings.Settings, resp *model.Response, cp window.Checkpoint, events []event.Event) (*event.Event, error) {
	e := event.Event{
		Time: t.r.now(), Type: event.TypeAnswer, Text: resp.Text, Thinking: resp.Thinking, Calls: resp.Calls,
		Model: s.Model.Name, Provider: s.Provider(), ResponseID: resp.ResponseID, Usage: resp.Usage,
		LatencyMS: resp.Latency.Milliseconds(),
		Window:    &event.Window{Start: cp.Start, TokensBefore: cp.TokensBefore},
	}
	e.Cost, e.CostSource = t.facts().Cost(s, resp.Usage, resp.Cost)
	if t.ops.endMark {
		ending.Mark(&e)
	}
	u := resp.Usage
	t.r.Metrics.Provider(e.Provider).Used(u.Input, u.Output, u.CacheRead, u.CacheWrite, e.Cost)
	for i := range min(len(events), 2) { // the first, or the first after the summary opening the window
		if events[i].Seq == cp.Start {
			e.Window.StartTime = events[i].Time
			break
		}
	}
	if err := t.appendEvent(ctx, &e); err != nil {
		return nil, err
	}
	if len(e.Calls) == 0 {
		t.once.lastAnswer = e.Seq
		t.log().Debug("answer written", "answer", e.Seq)
	}
	return &e, nil
}

// write opens the turn's conversation and appends its message, or finds
// the message answered already: that answer, with its seq, is put in to.
func (t *turn) write(ctx context.Context, s *settings.Settings, m *Message, to *Answer) error {
	t.life.span.SetStore(s.Storage.Conversations)
	if err := t.open(ctx, s.Storage.Conversations); err != nil {
		return err
	}
	if err := t.catchUpIDs(ctx); err != nil {
		return err
	}
	if err := t.untold(ctx); err != nil {
		return fmt.Errorf("the last answer told: %w", err)
	}
	a, at, err := t.repeated(ctx, m)
	switch {
	case err != nil || a.Seq != 0:
		*to = a
		return err
	case at != 0:
		t.seq, t.once.resumed = at, at
		if err := t.appendAgain(ctx, at); err != nil {
			return err
		}
	default:
		if err := t.appendMessage(ctx, m, nil); err != nil {
			return err
		}
	}
	// Written, the text is the window's to give: the turn does not hold
	// a copy of it while it waits for the model.
	m.Text = ""
	return nil
}
