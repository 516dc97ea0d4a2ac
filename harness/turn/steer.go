package turn

import (
	"context"
	"sync"

	"lnk.dev/linkharness/store/event"
)

// Steering. A message sent to a conversation while a turn of it runs in
// this process steers that turn rather than waiting for a turn of its own:
//
//   - The running turn appends it, with its head, at its next step's end:
//     once the model call it is in has its answer appended, or the round of
//     tool calls it is running has every result appended; always before
//     its next model call, never between a call and its result, so the
//     events read in the order the model saw them. One writer, the turn,
//     gives every event its seq.
//   - The next model call's prompt holds it. When it came during a call
//     whose answer calls nothing, the model is asked again, so it is
//     answered; past the last round, once more, told to call nothing.
//   - Each caller is told, at the turn's end (its answers appended, the
//     copy for people added to), the first answer calling nothing that came
//     after its message. When a steering message came while tools ran, that
//     is the answer the earlier message's caller is told too: the later
//     caller's is marked Shared, so a bridge relays each answer once.
//   - A message comes too late once the turn has its answer and nothing is
//     waiting, or once it asked its one call past the last round: it waits
//     for a turn of its own, as one arriving while a turn summarizes does.
//     So does a message carrying Link-Tools (a turn's tools are fixed when
//     it begins), and one whose id the conversation already holds.

// inbox takes the messages that steer one running turn. It is safe for
// concurrent use: senders offer, the turn takes. The zero value is open
// and empty; a nil *inbox takes nothing.
type inbox struct {
	mu sync.Mutex
	// guarded by mu
	closed  bool
	waiting []*steer // offered, not yet taken by the turn
	taken   []*steer // appended by the turn, told at its end

	endAsked bool                    // End asked the turn to end
	cancel   context.CancelCauseFunc // ends the turn; nil until it begins
	ended    *Answer                 // the answer the turn wrote marked ended
	left     bool                    // the turn let the conversation go
	thread   string                  // the turn's thread, once it is taken

	gone chan struct{} // closed once the turn let the conversation go; End waits on it
}

// steer is one message offered to a running turn, and its sender's side.
type steer struct {
	m      Message
	onText func(string) // the sender's, given the text of model calls after its message was taken
	done   chan steered // one send: what the sender is told

	// set by the turn
	told   *event.Event // the answer to tell
	shared bool         // told to an earlier message's caller as well
}

// steered is what a steering message's sender is told.
type steered struct {
	a       Answer
	err     error
	refused bool // not taken: it waits for a turn of its own
}

// offer hands m to the turn, or says it comes too late (nil).
func (in *inbox) offer(m Message, onText func(string)) *steer {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil
	}
	s := &steer{m: m, onText: onText, done: make(chan steered, 1)}
	in.waiting = append(in.waiting, s)
	return s
}

// take returns the messages waiting, for the turn to append.
func (in *inbox) take() []*steer {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	w := in.waiting
	in.waiting = nil
	return w
}

// accept records s as appended: from now on it hears the turn's text and
// is told its answer.
func (in *inbox) accept(s *steer) {
	in.mu.Lock()
	in.taken = append(in.taken, s)
	in.mu.Unlock()
}

// closeIfNone closes the inbox when nothing waits, and says whether it did:
// the turn's answer is then given. Nil is closed.
func (in *inbox) closeIfNone() bool {
	if in == nil {
		return true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.waiting) > 0 {
		return false
	}
	in.closed = true
	return true
}

// close takes no more messages; those waiting are still the turn's to take.
func (in *inbox) close() {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}

// text gives a fragment of a model call's text to every taken sender.
func (in *inbox) text(frag string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, s := range in.taken {
		if s.onText != nil {
			s.onText(frag)
		}
	}
}

// answered marks the answer a, which calls nothing, as the one to tell
// every taken sender not told one yet; shared says a is told to an earlier
// message's caller already (the turn's own, or a sender before).
func (in *inbox) answered(a *event.Event, shared bool) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, s := range in.taken {
		if s.told == nil {
			s.told, s.shared = a, shared
			shared = true
		}
	}
}

// finish ends the turn's taking: the taken are told their answer, the
// waiting that it never took are refused, to wait for a turn of their own.
// A taken message with no answer after it (the turn failed first) is
// refused too: its own turn finds it written and goes on from there, so it
// is answered, never dropped with the turn's error.
func (in *inbox) finish(thread string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.closed = true
	taken, waiting := in.taken, in.waiting
	in.taken, in.waiting = nil, nil
	in.mu.Unlock()
	for _, s := range taken {
		switch {
		case s.told == nil: // the turn ended without an answer after it
			s.done <- steered{refused: true}
		default:
			a := answerOf(thread, s.told)
			a.Shared = s.shared
			s.done <- steered{a: a}
		}
	}
	for _, s := range waiting {
		s.done <- steered{refused: true}
	}
}

func (in *inbox) refuse(s *steer) { s.done <- steered{refused: true} }

// answerOf is the Answer of answer event e.
func answerOf(thread string, e *event.Event) Answer {
	return Answer{Thread: thread, Seq: e.Seq, Text: e.Text, Usage: e.Usage, Ended: Ended(e)}
}

// takeSteers appends the messages waiting to steer the turn and returns
// events with them. A message the conversation already holds (see
// package idempotency) is refused: its own turn finds it taken, and tells
// its answer or goes on from it.
func (t *turn) takeSteers(ctx context.Context, events []event.Event) ([]event.Event, error) {
	waiting := t.in.take()
	for i, s := range waiting {
		seen, err := t.seenBefore(ctx, &s.m, events)
		if err != nil {
			for _, s := range waiting[i:] {
				t.in.refuse(s)
			}
			return events, err
		}
		if seen {
			t.in.refuse(s)
			continue
		}
		e, err := t.appendMessage(ctx, s.m)
		if err != nil {
			for _, s := range waiting[i:] {
				t.in.refuse(s)
			}
			return events, err
		}
		t.in.accept(s)
		events = append(events, e)
	}
	return events, nil
}

// steeredAfter takes, once the model answered calling nothing, the messages
// that came meanwhile, and says whether it appended any, for the model to
// be asked again. With none waiting, the inbox closes: the answer is the
// turn's, and a message from now on waits for a turn of its own.
func (t *turn) steeredAfter(ctx context.Context, events []event.Event) ([]event.Event, bool, error) {
	for !t.in.closeIfNone() {
		n := len(events)
		var err error
		if events, err = t.takeSteers(ctx, events); err != nil || len(events) > n {
			return events, err == nil, err
		}
	}
	return events, false, nil
}
