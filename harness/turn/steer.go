package turn

import (
	"context"
	"time"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/running"
	"lnk.dev/linkharness/store/event"
)

// operations is what reaches the turn from outside while it runs, and
// what ends it.
type operations struct {
	in      *running.Inbox[Message] // the messages that steer it, and End
	caller  context.Context         // the caller's: bounds waiting for another process's turn, as for one here
	endMark bool                    // the answer appended next is marked ended
	timeout time.Duration           // the turn's whole time, [turn] timeout
	cancel  context.CancelCauseFunc // ends the turn's own context: its time, the process's stop
	watch   ending.Watch            // its end record, read while it runs (see end.go)
}

// Steering. A message sent to a conversation while a turn of it runs in
// this process steers that turn rather than waiting for a turn of its own
// (package running hands it over):
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

// answerOf is the Answer of answer event e.
func answerOf(thread string, e *event.Event) Answer {
	return Answer{Thread: thread, Seq: e.Seq, Text: e.Text, Usage: e.Usage, Ended: ending.Marked(e)}
}

// takeSteers appends the messages waiting to steer the turn and returns
// events with them. A message the conversation already holds (see
// package idempotency) is refused: its own turn finds it taken, and tells
// its answer or goes on from it.
func (t *turn) takeSteers(ctx context.Context, events []event.Event) ([]event.Event, error) {
	waiting := t.ops.in.Take()
	for i, s := range waiting {
		seen, err := t.seenBefore(ctx, &s.M, events)
		if err != nil {
			for _, s := range waiting[i:] {
				t.ops.in.Refuse(s)
			}
			return events, err
		}
		if seen {
			t.ops.in.Refuse(s)
			continue
		}
		if err := t.appendMessage(ctx, &s.M, &events); err != nil {
			for _, s := range waiting[i:] {
				t.ops.in.Refuse(s)
			}
			return events, err
		}
		t.ops.in.Accept(s)
	}
	return events, nil
}

// steeredAfter takes, once the model answered calling nothing, the messages
// that came meanwhile, and says whether it appended any, for the model to
// be asked again. With none waiting, the inbox closes: the answer is the
// turn's, and a message from now on waits for a turn of its own.
func (t *turn) steeredAfter(ctx context.Context, events []event.Event) ([]event.Event, bool, error) {
	for !t.ops.in.CloseIfNone() {
		n := len(events)
		var err error
		if events, err = t.takeSteers(ctx, events); err != nil || len(events) > n {
			return events, err == nil, err
		}
	}
	return events, false, nil
}
