package turn

import (
	"context"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/summary"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store/event"
)

// A window past its room. A long round of calls can push a turn's next
// request past the conversation's share: between rounds the turn counts
// again and, past it, summarizes first what leaves at the next drop point
// (within a turn, an answer that calls a tool is a drop point too, since
// the summary before it is the user's), from what leaves alone, at most the
// share of it, newest first; then it goes on. So the request never
// outgrows the window. A summary that fails drops what would leave, at a
// message, as a window without summaries does.

// makeRoom returns events, the window the next request is made of, within
// the share: as it is, or opened by a summary of what left, cp moved to
// where it starts.
func (t *turn) makeRoom(ctx context.Context, s *settings.Settings, req *model.Request, cp *window.Checkpoint, events []event.Event) ([]event.Event, error) {
	for range 4 { // each pass leaves at least half the share
		t.win.Items = window.Items(t.win.Items, events, t.tokensOf(events))
		items := t.win.Items
		total := 0
		for _, it := range items {
			total += it.Tokens
		}
		if total <= t.sum.share {
			return events, nil
		}
		for i := range items {
			items[i].CanStart = items[i].CanStart || events[i].Type == event.TypeAnswer && len(events[i].Calls) > 0
		}
		stay, ok := window.Cut(items, t.sum.share)
		if !ok {
			return events, nil // one call's round alone fills it: nothing can leave
		}
		next := window.Checkpoint{Start: items[stay].Seq, TokensBefore: cp.TokensBefore}
		for _, it := range items[:stay] {
			if it.Through == 0 {
				next.TokensBefore += int64(it.Tokens)
			}
		}
		t.sum.madeRoom = true
		sum, err := t.summarizeFirst(ctx, s, req, events[:stay], &events[stay], next)
		if err != nil {
			t.log().Warn("summary before an answer not written; what leaves is dropped", "through", items[stay].Seq-1, "error", err)
			// Dropped at a message, so the window still starts with the user.
			for i := range items {
				items[i].CanStart = events[i].Type == event.TypeMessage
			}
			if stay, ok = window.Cut(items, t.sum.share); !ok {
				return events, nil
			}
			*cp = window.Checkpoint{Start: items[stay].Seq, TokensBefore: cp.TokensBefore}
			for _, it := range items[:stay] {
				if it.Through == 0 {
					cp.TokensBefore += int64(it.Tokens)
				}
			}
			events = append([]event.Event(nil), events[stay:]...)
			continue
		}
		*cp = next
		events = append([]event.Event{*sum}, events[stay:]...)
	}
	return events, nil
}

// summarizeFirst asks for a summary of leaving, all a request holds but for
// the system prompt and the tools, which stay as they were so the
// provider's cache holds for them: the newest of it that fits the share,
// calls and results written as text (what fits may begin mid-round). It
// appends the summary, which opens the window at stay.
func (t *turn) summarizeFirst(ctx context.Context, s *settings.Settings, req *model.Request, leaving []event.Event, stay *event.Event, next window.Checkpoint) (*event.Event, error) {
	name := "a tool"
	if len(stay.Calls) > 0 {
		name = stay.Calls[0].Name
	}
	notes := s.Window.SaveNotes && t.tools.offer != nil && t.tools.offer.Offered(prompt.NotesTool) && summary.OwnerSpoke(leaving)
	ask := prompt.SummaryAskFirst(name, notes)
	budget := t.sum.share - window.Tokens(ask) - 8
	k, used := len(leaving), 0
	for k > 0 && used+prompt.EventTokens(&leaving[k-1]) <= budget {
		k--
		used += prompt.EventTokens(&leaving[k])
	}
	msgs := prompt.CallsAsText(prompt.Messages(leaving[k:]))
	if len(msgs) == 0 {
		return nil, ErrNoSummary
	}
	sreq := *req
	sreq.Messages, sreq.Prefix = prompt.WithNote(msgs, ask), nil
	sreq.CacheThrough = 0
	ss := *s
	resp, u, calls, err := t.askSummary(ctx, &ss, &sreq, notes)
	if len(calls) > 0 {
		t.recompose(req)
	}
	var e *event.Event
	if err == nil {
		c := &summary.Ask{Through: stay.Seq - 1, Window: event.Window{Start: next.Start, StartTime: stay.Time, TokensBefore: next.TokensBefore}}
		r := *resp
		r.Usage, r.Cost = u.Usage, u.Cost
		e, err = t.appendSummary(ctx, &ss, c, &r, calls)
	}
	t.countSummary(&ss, err, u)
	return e, err
}

// recompose composes the turn's instructions again, once notes were saved
// before its answer: the notes change them from there on. The share is
// counted again with them.
func (t *turn) recompose(req *model.Request) {
	if t.comp.msg == nil || t.comp.set == nil {
		return
	}
	req.System, req.SystemStable = t.composeFor(t.comp.set, t.comp.msg)
	t.sum.share = window.Share(req.Window, req.MaxTokens, window.Tokens(req.System)+prompt.ToolsTokens(req.Tools), t.comp.set.Window.Margin)
}
