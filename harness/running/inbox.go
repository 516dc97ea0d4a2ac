package running

import (
	"context"
	"sync"

	"lnk.dev/linkharness/store/event"
)

// Inbox takes the messages that steer one running turn, and a request to
// end it. It is safe for concurrent use: senders offer, the turn takes.
// The zero value is open and empty; a nil *Inbox takes nothing.
type Inbox[M any] struct {
	mu sync.Mutex
	// guarded by mu
	closed  bool
	waiting []*Steer[M] // offered, not yet taken by the turn
	taken   []*Steer[M] // appended by the turn, told at its end

	endCause error                   // why End asked the turn to end; nil: it did not
	cancel   context.CancelCauseFunc // ends the turn; nil until it begins
	ended    *event.Event            // the answer the turn wrote marked ended
	left     bool                    // the turn let the conversation go
	thread   string                  // the turn's thread, once it is taken

	gone chan struct{} // closed once the turn let the conversation go; End waits on it
}

// Steer is one message offered to a running turn, and its sender's side.
type Steer[M any] struct {
	M      M
	onText func(string) // the sender's, given the text of model calls after its message was taken
	done   chan Steered // one send: what the sender is told

	// set by the turn
	told   *event.Event // the answer to tell
	shared bool         // told to an earlier message's caller as well
}

// Steered is what a steering message's sender is told: the answer after
// its message, which calls nothing, and whether it is shared with an
// earlier message's caller; or that it was refused, not taken, to wait
// for a turn of its own.
type Steered struct {
	Told    *event.Event
	Shared  bool
	Refused bool
}

// Wait waits for what s's sender is told.
func (s *Steer[M]) Wait() Steered { return <-s.done }

// Offer hands m to the turn, or says it comes too late (nil). onText, when
// not nil, is given the text of the turn's model calls once it took m.
func (in *Inbox[M]) Offer(m M, onText func(string)) *Steer[M] {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil
	}
	s := &Steer[M]{M: m, onText: onText, done: make(chan Steered, 1)}
	in.waiting = append(in.waiting, s)
	return s
}

// Take returns the messages waiting, for the turn to append.
func (in *Inbox[M]) Take() []*Steer[M] {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	w := in.waiting
	in.waiting = nil
	return w
}

// Accept records s as appended: from now on it hears the turn's text and
// is told its answer.
func (in *Inbox[M]) Accept(s *Steer[M]) {
	in.mu.Lock()
	in.taken = append(in.taken, s)
	in.mu.Unlock()
}

// CloseIfNone closes the inbox when nothing waits, and says whether it
// did: the turn's answer is then given. Nil is closed.
func (in *Inbox[M]) CloseIfNone() bool {
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

// Close takes no more messages; those waiting are still the turn's to take.
func (in *Inbox[M]) Close() {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}

// Text gives a fragment of a model call's text to every taken sender.
func (in *Inbox[M]) Text(frag string) {
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

// Answered marks the answer a, which calls nothing, as the one to tell
// every taken sender not told one yet; shared says a is told to an earlier
// message's caller already (the turn's own, or a sender before).
func (in *Inbox[M]) Answered(a *event.Event, shared bool) {
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

// Finish ends the turn's taking: the taken are told their answer, the
// waiting that it never took are refused, to wait for a turn of their own.
// A taken message with no answer after it (the turn failed first) is
// refused too: its own turn finds it written and goes on from there, so it
// is answered, never dropped with the turn's error.
func (in *Inbox[M]) Finish() {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.closed = true
	taken, waiting := in.taken, in.waiting
	in.taken, in.waiting = nil, nil
	in.mu.Unlock()
	for _, s := range taken {
		if s.told == nil { // the turn ended without an answer after it
			s.done <- Steered{Refused: true}
			continue
		}
		s.done <- Steered{Told: s.told, Shared: s.shared}
	}
	for _, s := range waiting {
		s.done <- Steered{Refused: true}
	}
}

// Refuse hands s back, not taken: it waits for a turn of its own.
func (in *Inbox[M]) Refuse(s *Steer[M]) { s.done <- Steered{Refused: true} }

// SetThread records the turn's thread, for Turns.Threads.
func (in *Inbox[M]) SetThread(thread string) {
	in.mu.Lock()
	in.thread = thread
	in.mu.Unlock()
}

// Thread is the turn's thread, as SetThread recorded it.
func (in *Inbox[M]) Thread() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.thread
}

// End asks the inbox's turn to end, cancelling it with cause, and says
// whether it was running.
func (in *Inbox[M]) End(cause error) bool {
	in.mu.Lock()
	if in.left {
		in.mu.Unlock()
		return false
	}
	in.endCause = cause
	cancel := in.cancel
	in.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	return true
}

// EndWith sets how the turn is ended; asked to end already, it is ended now.
// Nil: an end is only recorded from here.
func (in *Inbox[M]) EndWith(cancel context.CancelCauseFunc) {
	in.mu.Lock()
	in.cancel = cancel
	cause := in.endCause
	in.mu.Unlock()
	if cause != nil && cancel != nil {
		cancel(cause)
	}
}

// SetEnded records e as the answer the turn wrote marked ended.
func (in *Inbox[M]) SetEnded(e *event.Event) {
	in.mu.Lock()
	in.ended = e
	in.mu.Unlock()
}

// Ended is the answer the turn wrote marked ended, or nil.
func (in *Inbox[M]) Ended() *event.Event {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ended
}

// Gone is closed once the turn let the conversation go.
func (in *Inbox[M]) Gone() <-chan struct{} { return in.gone }

// leave marks the turn gone: End waits for it.
func (in *Inbox[M]) leave() {
	in.mu.Lock()
	in.left = true
	in.mu.Unlock()
	close(in.gone)
}
