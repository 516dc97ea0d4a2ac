package turn

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/event"
)

// The copy for people (chat.md, see package chatcopy) is added to by each
// turn once its answer is written: what was said since the answer before.

// addToCopy adds this turn's part to the copy: the events since the answer
// before this turn's, which the turn already holds. events are the window
// as read (its first n) and then everything the turn appended; n < 0 says
// the turn's own events are not all there (what left the window mid-turn),
// and the copy is made again from the store.
//
// A warm conversation keeps the copy open between its turns (chatcopy.File),
// with the size it left it and the mark it ends with: while the path
// names the same file of that size, the next part is written at its end
// with no read.
func (t *turn) addToCopy(ctx context.Context, events []event.Event, n int) error {
	path, err := home.In(t.dir, home.ChatCopy)
	if err != nil {
		return err
	}
	kept := t.warm.kept.TakeCopy()
	if k, ok := ability[interface{ KeepsNoCopy() bool }](t.conv); ok && k.KeepsNoCopy() {
		kept.Close()
		t.warm.touched = true
		// A copy left from when the conversation was a log would be read
		// in place of the events, and never grow again.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if n < 0 {
		kept.Close()
		return t.remakeCopy(ctx, path)
	}
	// The answer before this turn's, and what came after it.
	prev, from := int64(0), 0
	for i := n - 1; i >= 0; i-- {
		if e := &events[i]; e.Type == event.TypeAnswer {
			prev, from = e.Seq, i+1
			break
		}
	}
	c, endsWell, err := chatcopy.Open(path, prev, kept)
	if err != nil || c != kept {
		t.warm.touched = true // opened afresh: made, maybe
	}
	if err != nil {
		return err
	}
	if !endsWell || (prev == 0 && events[0].Seq != 1) {
		c.Close()
		return t.remakeCopy(ctx, path)
	}
	wrote, err := c.Add(path, t.r.Agent.Name, events[from:])
	if err != nil {
		return err
	}
	t.written += int64(wrote)
	t.warm.kept.KeepCopy(c)
	return nil
}

// remakeCopy makes the copy again from every event, when it was cut short
// or written elsewhere.
func (t *turn) remakeCopy(ctx context.Context, path string) error {
	t.warm.touched = true
	n, err := chatcopy.Remake(ctx, path, t.r.Agent.Name, t.conv)
	t.written += n
	return err
}
