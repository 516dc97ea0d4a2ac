package turn

import (
	"context"
	"fmt"
	"strings"

	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// toolUse is the tools the turn offers.
type toolUse struct {
	offer *tools.Turn       // what it offers, and the sessions it opened
	words []prompt.ToolText // what they say of themselves, set before the prompt is composed
	told  func(ToolStep)    // the message's OnTool, or nil
}

// ToolStep is a tool call as the turn makes it, told the turn's caller
// (Message.OnTool) as the call is made, then again with its outcome.
type ToolStep struct {
	Name string // the tool, as the model called it: web__search
	ID   string // the call's id, as the model gave it
	Args []byte // the arguments as sent to the tool, JSON; nil in an outcome

	Done   bool // an outcome: the tool answered, or the call was given up
	Failed bool // the outcome is an error, said in the conversation and not here
}

// tell tells the turn's caller s, when it asked.
func (u *toolUse) tell(s ToolStep) {
	if u.told != nil {
		u.told(s)
	}
}

// MaxRounds is the most rounds of tool calls a turn makes. The model is then
// asked once more, told to call nothing, so a model stuck in a loop still
// answers.
const MaxRounds = 8

// LastRoundNote is added to the last request of a turn that used every
// round: the model's answer to it is the turn's, and a call it makes anyway
// is not run.
const LastRoundNote = "[You have used every round of tool calls this turn may make. Answer now with what you have, and call no tool.]"

// rounds asks the model and runs the calls it makes, a round at a time: the
// answer that makes calls is appended holding them, each tool's answer is
// appended as it comes, the calls of a round run at once. Before each call
// the messages that came to steer the turn are appended (see steer.go). It
// ends with an answer that makes no call, at most MaxRounds rounds on, once
// no message waits; past the last round it asks once more for those that
// came meanwhile. It returns the answer the turn's own message is told (the
// first that calls nothing) and events with everything the turn appended.
func (t *turn) rounds(ctx context.Context, s *settings.Settings, req *model.Request, cp *window.Checkpoint, events []event.Event, onText func(string)) (*event.Event, []event.Event, error) {
	if t.tools.offer != nil {
		req.Tools = t.tools.offer.Tools()
	}
	first := 0
	if t.once.resumed != 0 {
		var err error
		if events, first, err = t.resume(ctx, events); err != nil {
			return nil, nil, err
		}
	}
	var (
		reply *event.Event
		said  strings.Builder // what the model said of its answer so far, kept if the turn's time ends it
	)
	// fail is the end of rounds cut by err: asked to end (End), the turn
	// answers with what it has instead.
	fail := func(events []event.Event, err error) (*event.Event, []event.Event, error) {
		if endedBy(ctx) {
			return t.endRounds(ctx, s, *cp, events, reply, said.String())
		}
		return nil, nil, err
	}
	for round := first; ; round++ {
		if round > MaxRounds {
			t.ops.in.Close() // the call for those that steered it past the last round is the turn's last
		}
		var err error
		if events, err = t.takeSteers(ctx, events); err != nil {
			return fail(events, err)
		}
		if events, err = t.makeRoom(ctx, s, req, cp, events); err != nil {
			return fail(events, err)
		}
		last := round >= MaxRounds
		note := ""
		if last {
			note = LastRoundNote
		}
		t.warm.kept.Messages(req, events, s.Provider(), len(req.Tools) == 0, note)
		said.Reset()
		resp, err := t.callModel(ctx, s, req, func(frag string) {
			said.WriteString(frag)
			onText(frag)
		})
		if err != nil {
			if pastTime(ctx) && said.Len() > 0 {
				t.keepSaid(ctx, s, *cp, events, said.String())
			}
			return fail(events, err)
		}
		if last {
			resp.Calls = nil // told to call nothing: a call made anyway is not run, nor kept
		}
		var answer *event.Event
		if answer, events, err = t.appendRound(ctx, s, resp, cp, events); err != nil {
			return fail(events, err)
		}
		if len(resp.Calls) == 0 {
			t.ops.in.Answered(answer, reply == nil)
			if reply == nil {
				reply = answer
			}
			more := false
			if events, more, err = t.steeredAfter(ctx, events); err != nil {
				return fail(events, err)
			}
			if !more {
				return reply, events, nil
			}
			continue // messages came while it answered: asked again, so they are answered
		}
		said.Reset() // said with the calls, and kept with them
		results, err := t.runCalls(ctx, resp.Calls)
		events = t.extend(events, results...)
		if err != nil || endedBy(ctx) {
			return fail(events, err)
		}
		if pastTime(ctx) {
			return nil, nil, context.Cause(ctx)
		}
	}
}

// appendRound appends a round's answer, and returns it and events with it:
// copied here, not in rounds, whose frame is under the model's wait.
func (t *turn) appendRound(ctx context.Context, s *settings.Settings, resp *model.Response, cp *window.Checkpoint, events []event.Event) (*event.Event, []event.Event, error) {
	answer, err := t.appendAnswer(ctx, s, resp, *cp, events)
	if err != nil {
		return nil, events, err
	}
	return answer, t.extend(events, *answer), nil
}

// resume runs the calls a turn that ended made and never ran, and counts
// the rounds spent on the message: failing turns are not given them again.
func (t *turn) resume(ctx context.Context, events []event.Event) ([]event.Event, int, error) {
	if calls := idempotency.Unanswered(events, t.once.resumed); len(calls) > 0 {
		results, err := t.runCalls(ctx, calls)
		events = t.extend(events, results...)
		if err != nil {
			return nil, 0, err
		}
	}
	first, err := t.roundsSpent(ctx)
	return events, first, err
}

// keepSaid appends what the model said before the turn's time ended its
// call, as the answer it made: the conversation keeps what its caller was
// streamed. It is written past the turn's time, so the next turn reads it.
func (t *turn) keepSaid(ctx context.Context, s *settings.Settings, cp window.Checkpoint, events []event.Event, said string) {
	if _, err := t.appendAnswer(context.WithoutCancel(ctx), s, &model.Response{Text: said}, cp, events); err != nil {
		t.log().Error("the answer cut at the turn's time not written", "error", err)
	}
}

// roundsSpent is how many rounds the turns before spent on the message at
// t.once.resumed: the answers after it, each one model call. They are read from
// the conversation, since the window may begin after the message.
func (t *turn) roundsSpent(ctx context.Context) (int, error) {
	n := 0
	var (
		e    event.Event
		derr error
	)
	err := t.conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		if seq <= t.once.resumed {
			return false
		}
		t.read += int64(len(ev))
		if err := t.dec.Decode(ev, &e); err != nil {
			derr = fmt.Errorf("event %d: %w", seq, err)
			return false
		}
		if e.Type == event.TypeAnswer {
			n++
		}
		return true
	})
	if err == nil {
		err = derr
	}
	return n, err
}

// runCalls runs one round's calls at once and appends each tool's answer as
// it comes, the first to answer first. A call is always answered: by the
// tool, or with why it was not.
func (t *turn) runCalls(ctx context.Context, calls []event.Call) ([]event.Event, error) {
	type answered struct {
		c event.Call
		r tools.Result
	}
	ch := make(chan answered, len(calls))
	for _, c := range calls {
		t.tools.tell(ToolStep{Name: c.Name, ID: c.ID, Args: c.Args})
		go func() {
			start := t.r.now()
			sp := t.life.span.Tool(c.Name, c.ID)
			r := t.call(ctx, c)
			t.r.Metrics.Tool(t.r.now().Sub(start), r.Error != "")
			sp.End(toolErr(r.Error != ""))
			ch <- answered{c, r}
		}()
	}
	out := make([]event.Event, 0, len(calls))
	var werr error
	for range calls {
		a := <-ch
		wctx := ctx
		switch {
		case pastTime(ctx):
			// Ended by the turn's time: said so, and written past it, so
			// the call is not made again.
			if a.r.Error != "" {
				a.r = tools.Result{Error: fmt.Sprintf("The turn ran past its time of %v before the tool answered: the call to %s was given up.", t.ops.timeout, a.c.Name)}
			}
			wctx = context.WithoutCancel(ctx)
		case endedBy(ctx):
			// Asked to end (End): the same, so the call is not made again.
			if a.r.Error != "" {
				a.r = tools.Result{Error: fmt.Sprintf("The turn was ended before the tool answered: the call to %s was cancelled.", a.c.Name)}
			}
			wctx = context.WithoutCancel(ctx)
		}
		e := a.r.Event(t.r.now(), a.c)
		t.tools.tell(ToolStep{Name: a.c.Name, ID: a.c.ID, Done: true, Failed: e.Error != ""})
		if werr == nil {
			werr = t.appendEvent(wctx, &e)
		}
		out = append(out, e)
	}
	return out, werr
}

// call runs one call on the tools the conversation was offered.
func (t *turn) call(ctx context.Context, c event.Call) tools.Result {
	if t.tools.offer == nil || !t.tools.offer.Offered(c.Name) {
		return tools.Result{Error: fmt.Sprintf("There is no tool named %s in this conversation.", c.Name)}
	}
	return t.tools.offer.Call(ctx, t.thread, c.Name, c.Args)
}

// beginTools narrows the conversation's tools when the message says so
// (Link-Tools), and begins the turn's use of the agent's tools: what it
// offers, and what the tools say of themselves for the prompt.
func (t *turn) beginTools(ctx context.Context, m *Message) error {
	t.tools.told = m.OnTool
	only, err := t.narrowing(ctx, m.Tools)
	if err != nil {
		return fmt.Errorf("the conversation's tools: %w", err)
	}
	if t.r.Tools == nil {
		return nil
	}
	off, err := t.r.Tools.Begin(ctx, only)
	if off == nil {
		return err
	}
	t.tools.offer = off
	for _, in := range off.Instructions() {
		t.tools.words = append(t.tools.words, prompt.ToolText{Tool: in.Tool, Text: in.Text})
	}
	return err
}

// narrowing is the conversation's narrowing, narrowed first by later when
// the message brings a list (see tools.Narrowing), its store's abilities
// found under the turn's lease.
func (t *turn) narrowing(ctx context.Context, later []string) (*tools.Only, error) {
	if later != nil {
		later = t.r.Tools.Expand(later)
	}
	n, _ := ability[store.Narrower](t.conv)
	meta, _ := ability[store.Meta](t.conv)
	inFile := later == nil && (n == nil || meta == nil) // read from tools.json alone
	kept := t.warm.kept
	if inFile && t.warm.taken && kept.NoToolsFile {
		return nil, nil
	}
	only, err := tools.Narrowing(ctx, t.dir, n, meta, later)
	if kept != nil {
		kept.NoToolsFile = inFile && only == nil && err == nil
	}
	return only, err
}
