package turn

import (
	"context"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/store/event"
)

// An answer is told when its caller was given it, or it was kept for
// _link/recover (see package idempotency): an answer a process that died
// wrote and never told is handed to Runner.Untold by the conversation's
// next turn, once.

// MarkTold records that the answer at seq of thread was told (given to
// its caller, or kept for _link/recover), and every one before it.
func (r *Runner) MarkTold(thread string, seq int64) error {
	dir, err := r.Folder(context.Background(), thread)
	if err != nil {
		return err
	}
	defer r.telling.Done(dir, seq)
	if ok, err := r.Warm.MarkTold(r.Agent.Name, thread, dir, seq); ok {
		return err
	}
	return idempotency.WriteTold(dir, seq)
}

// untold hands the conversation's last answer to Runner.Untold when nobody
// was told it: it is the last event (or the last before the summary
// written after it), it calls nothing, it is past what was told, and this
// process is not telling it. Run holding the conversation, so in one
// process at a time; it is then marked told, so it is handed over once.
//
// A conversation with no told file yet (new, or kept before Link Harness
// recorded what it told) is given one saying its last seq: nothing of it
// is handed over, since nothing says what was told before.
func (t *turn) untold(ctx context.Context) error {
	if t.r.Untold == nil {
		return nil
	}
	pend, err := home.In(t.dir, home.ChatPending)
	if err != nil {
		return err
	}
	told, ok, err := t.readTold(pend, false)
	switch {
	case err != nil:
		return err
	case !ok:
		t.warm.touched = true // the pending folder made, maybe
		f, err := idempotency.CreateTold(t.dir, t.last)
		t.warm.kept.KeepTold(f) // for the answer's marking, and the next turn
		return err
	case t.last == 0:
		return nil
	}
	var a *event.Event
	err = t.backward(ctx, func(e *event.Event) bool {
		switch {
		case e.Type == event.TypeSummary && e.Seq == t.last:
			return true // the summary's turn: its answer is before it
		case e.Type == event.TypeAnswer && len(e.Calls) == 0:
			a = e
		}
		return false
	})
	if err != nil || a == nil || t.r.telling.Has(t.dir, a.Seq) || told >= a.Seq {
		return err
	}
	// What the kept file remembered is less: the file may say more (an
	// answer marked by path while a turn held it).
	if told, _, err = t.readTold(pend, true); err != nil || told >= a.Seq {
		return err
	}
	t.r.Untold(t.thread, answerOf(t.thread, a))
	return idempotency.WriteTold(t.dir, a.Seq)
}

// readTold reads the highest seq told for the turn, and says whether
// there is a told file: the file is kept open between the turns of a warm
// conversation (idempotency.Told), and what it last read or wrote is
// taken for it unless fresh, else it is read again with one pread (the
// file says at least as much). One kept in the pending folder pend, as
// before, is read and not kept open: the next told is written in the
// conversation's folder.
func (t *turn) readTold(pend string, fresh bool) (int64, bool, error) {
	f := t.warm.kept.TakeTold()
	if !f.IsOpen() {
		var (
			ok  bool
			err error
		)
		if f, ok, err = idempotency.OpenTold(t.dir); !ok {
			return idempotency.ReadToldFile(filepath.Join(pend, idempotency.ToldName))
		} else if err != nil {
			return 0, true, err
		}
	}
	told, known := f.Known()
	var err error
	if fresh || !known {
		told, err = f.Read()
	}
	t.warm.kept.KeepTold(f) // closed when nothing is kept
	return told, true, err
}
