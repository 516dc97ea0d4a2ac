package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// Errors of ending a turn.
var (
	// ErrEnded is the cause a turn asked to end (Runner.End) is cancelled
	// with. A turn ended once its message was written answers with what it
	// had, marked ended, and returns no error; one ended before returns
	// ErrEnded, having written nothing.
	ErrEnded = errors.New("turn: asked to end")
	// ErrNotRunning comes from End when no turn of the conversation runs
	// in this process: nothing is changed.
	ErrNotRunning = errors.New("turn: no turn of the conversation is running here")
)

// End asks the turn of thread running in this process to end: its model
// stream is closed, its running tool calls are cancelled (the MCP client
// ends each call's request, which is MCP's cancellation over HTTP, and
// sends notifications/cancelled over stdio), and it writes what it has as
// an answer marked ended, so the conversation stays whole for the next
// turn. End waits for the turn to let the conversation go, or for ctx, and
// returns the ended answer; Ended false says the turn gave its answer
// before it saw the end (a summary it writes after its answer is not
// ended: End waits for it). A turn another process of the home runs is
// asked through the conversation's end record (see package ending), and
// End waits for it the same way. With no turn running it returns
// ErrNotRunning and changes nothing.
func (r *Runner) End(ctx context.Context, thread string) (Answer, error) {
	dir, err := r.Folder(ctx, thread)
	if err != nil {
		return Answer{}, err
	}
	in := r.locks.Holder(dir)
	if in == nil {
		return r.endElsewhere(ctx, thread, dir)
	}
	if !in.End(ErrEnded) {
		return Answer{}, fmt.Errorf("%w: %q", ErrNotRunning, thread)
	}
	select {
	case <-in.Gone():
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
	e := in.Ended()
	if e == nil {
		return Answer{Thread: thread}, nil
	}
	return answerOf(in.Thread(), e), nil // the thread of the turn that ended
}

// endElsewhere asks the turn of thread another process of the home runs
// to end, through its end record, and returns the answer it ended with.
func (r *Runner) endElsewhere(ctx context.Context, thread, dir string) (Answer, error) {
	conv, err := r.conversationIn(dir, thread)
	if errors.Is(err, store.ErrNotFound) {
		return Answer{}, fmt.Errorf("%w: %q", ErrNotRunning, thread)
	}
	if err != nil {
		return Answer{}, err
	}
	defer conv.Close()
	var tick time.Duration
	if r.Ends != nil {
		tick = r.Ends.Tick
	}
	e, err := ending.Elsewhere(ctx, dir, conv, tick)
	switch {
	case errors.Is(err, ending.ErrNotHeld), errors.Is(err, ending.ErrUnfinished):
		return Answer{}, fmt.Errorf("%w: %q: %v", ErrNotRunning, thread, err)
	case err != nil:
		return Answer{}, err
	}
	return answerOf(thread, &e), nil
}

// watchEnd has the process's Watcher read the turn's end record while it
// runs, once its message is written: a record past the event before it is
// the turn's (see package ending).
func (t *turn) watchEnd() {
	if t.r.Ends == nil {
		return
	}
	t.ops.watch = ending.Watch{Dir: t.dir, After: t.seq - 1, End: t.ops.in, Cause: ErrEnded}
	t.r.Ends.Add(&t.ops.watch)
}

// endable is ctx ended by End too, with cause ErrEnded: the rounds' context.
// The steps before them are not, so a turn asked to end has its message
// written, and answers it marked ended; asked before, its rounds end as
// they begin. End cancels it through the inbox, no context between.
func (t *turn) endable(ctx context.Context) (context.Context, func()) {
	if t.ops.in == nil {
		return ctx, func() {}
	}
	rctx, cancel := context.WithCancelCause(ctx)
	t.ops.in.EndWith(cancel)
	return rctx, func() { t.ops.in.EndWith(nil); cancel(nil) }
}

// endedBy says whether ctx, a turn's, was ended by End.
func endedBy(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrEnded) }

// endRounds writes the answer of a turn asked to end: what the model said
// of its answer so far (else ending.Text), marked ended, written past the
// end so the conversation is whole. It is the turn's reply when it had
// none yet, and told to those who steered it and were told nothing.
func (t *turn) endRounds(ctx context.Context, s *settings.Settings, cp window.Checkpoint, events []event.Event, reply *event.Event, said string) (*event.Event, []event.Event, error) {
	ctx = context.WithoutCancel(ctx)
	text := said
	if strings.TrimSpace(text) == "" {
		text = ending.Text
	}
	resp := &model.Response{Text: text}
	e, err := t.appendEndedAnswer(ctx, s, resp, cp, events)
	if err != nil {
		return nil, nil, fmt.Errorf("writing the ended answer: %w", err)
	}
	events = t.extend(events, *e)
	t.ops.in.Answered(e, reply != nil)
	t.ops.in.SetEnded(e)
	t.log().Info("turn ended", "answer", e.Seq)
	t.r.Metrics.Did(metrics.OpEnd)
	if reply == nil {
		reply = e
	}
	return reply, events, nil
}

// appendEndedAnswer is appendAnswer marked ended.
func (t *turn) appendEndedAnswer(ctx context.Context, s *settings.Settings, resp *model.Response, cp window.Checkpoint, events []event.Event) (*event.Event, error) {
	t.ops.endMark = true
	defer func() { t.ops.endMark = false }()
	return t.appendAnswer(ctx, s, resp, cp, events)
}
