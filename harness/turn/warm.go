package turn

import (
	"context"
	"fmt"

	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// warmth is what the turn keeps of its conversation for the next turn.
type warmth struct {
	kept *warm.Conv // nil when the Runner has no Warm: nothing is kept
	keep bool       // the turn ended well: kept is put back
	// folder is the folder's key as a turn that took its conversation
	// warm found it (taken), and touched says the turn made, removed or
	// renamed a name in it (or may have): untouched, the key is the one to
	// leave, without asking again.
	folder  warm.Folder
	taken   bool
	touched bool
}

// What a turn keeps for the conversation's next turn in this process lives
// in package warm: the turn takes it back when it opens the conversation
// (open), reads the window's events and makes its messages through it
// (readWindow, warm.Conv.Messages), hands it each event it appends, and
// puts it back when it ends well (close). Without a Runner's Warm, its
// warm.Conv is nil and keeps nothing: the same steps, everything read and
// composed afresh.

// dropWarm keeps nothing of the turn for the next: what it wrote is not
// known.
func (t *turn) dropWarm() {
	t.warm.keep = false
	t.warm.kept.CloseFiles()
	t.warm.kept = nil
}

// backward calls fn with the conversation's events from its last back,
// while fn returns true: from the events the turn kept when they end with
// the last, else read from the store. fn may keep the event it is given.
func (t *turn) backward(ctx context.Context, fn func(e *event.Event) bool) error {
	if log, _, _ := t.warm.kept.Events(t.last); len(log) > 0 {
		for i := len(log) - 1; i >= 0; i-- {
			e := log[i]
			if !fn(&e) {
				return nil
			}
		}
		if log[0].Seq == 1 {
			return nil
		}
		// Past what was kept: the rest from the store.
		return t.readBackward(ctx, log[0].Seq-1, fn)
	}
	return t.readBackward(ctx, store.FromLast, fn)
}

// readBackward calls fn with the events read from the store from seq from
// back, while fn returns true.
func (t *turn) readBackward(ctx context.Context, from int64, fn func(e *event.Event) bool) error {
	var derr error
	err := t.conv.Read(ctx, from, store.Backward, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		e := new(event.Event)
		if derr = t.dec.Decode(ev, e); derr != nil {
			derr = fmt.Errorf("event %d: %w", seq, derr)
			return false
		}
		return fn(e)
	})
	if err == nil {
		err = derr
	}
	return err
}
