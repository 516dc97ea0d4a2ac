package turn

import (
	"context"
	"fmt"

	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// What a turn keeps for the conversation's next turn in this process lives
// in package warm: the turn takes it back when it opens the conversation
// (open), reads the window's events and makes its messages through it
// (readWindow, warm.Conv.Messages), hands it each event it appends, and
// puts it back when it ends well (close). Without a Runner's Warm, its
// warm.Conv is nil and keeps nothing: the same steps, everything read and
// composed afresh.

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

// keeping says whether the turn puts its conversation back for the next:
// its Runner keeps conversations, and it ended well.
func (t *turn) keeping() bool {
	return t.warm.keep && t.warm.kept != nil && t.warm.kept.Conv != nil
}

// leaveFolder records the folder as the turn leaves it, for the next turn
// to find it unchanged, and whether it stays open once its flock is let
// go. A turn that took it warm and made, removed or renamed no name in it
// leaves the key it found, without asking again.
func (t *turn) leaveFolder() {
	if !t.keeping() {
		return
	}
	var err error
	if t.warm.taken && !t.warm.touched && (t.once.ids == nil || !t.once.ids.Made()) {
		t.warm.kept.Folder = t.warm.folder
	} else {
		t.warm.kept.Folder, err = t.folderNow()
	}
	t.warm.keep = err == nil
	t.lock.keepDir = t.warm.keep && t.lock.locked
}

// putBack puts the conversation back in the Runner's Warm for its next
// turn, with its folder open as fd when it stays open, and the id index.
func (t *turn) putBack(fd int) {
	k := t.warm.kept
	if t.lock.keepDir {
		k.KeepDir(fd)
	}
	k.Last = t.last
	k.KeepIDs(t.once.ids)
	t.once.ids = nil
	if t.r.HoldHome {
		k.HoldHome(&t.r.home)
	}
	t.r.Warm.Put(t.r.Agent.Name, t.thread, k)
}

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
