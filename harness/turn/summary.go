package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store/event"
)

// Summaries: compaction after the answer. Once the conversation fills
// [window] compact_at of its share, the turn answers first, with the window
// it last sent (the room compact_at leaves holds what came since), and its
// answer goes to its caller. Then, still holding the conversation, the
// model is asked for the summary as a continuation of that same request:
// the same system, tools and messages, the answer, and one more user
// message (prompt.SummaryAsk) quoting the start of the first message that
// stays. The provider's cache holds for all of it: Anthropic's breakpoints
// stay where the answer's request had them, OpenAI's and OpenRouter's
// prompt_cache_key is the same. The summary is one event, written once,
// never in the chat or its copy for people; the next turns' window starts
// with it (see readWindow). One that fails, is refused or is cut short
// writes nothing, and a later turn asks again (window.Due backs off).

// ErrNoSummary comes, wrapped with why, when the model answered a summary's
// request with no summary to keep: no text, a refusal, an answer cut at its
// limit, or a tool call. Nothing is written.
var ErrNoSummary = errors.New("turn: no summary")

// compaction is what a turn that answered needs to ask for the summary
// after its answer.
type compaction struct {
	s       settings.Settings
	req     model.Request // the answer's request, as it was sent
	answer  event.Event   // the answer, which calls nothing
	through int64         // the last seq the summary covers
	quote   string        // the text of the first message that stays
	window  event.Window  // where the window starts once the summary is written
	notes   bool          // the model may save notes first ([window] save_notes)
}

// dueSummary says whether the turn summarizes after its answer, and what
// it asks: events are the window after the answer (its summary first, as
// sent, then all the turn appended), items their items (windowItems), req
// the request the answer was made with, cp where the window started;
// canNote says the agent can write notes (its tools offer prompt.NotesTool).
func dueSummary(s *settings.Settings, req *model.Request, events []event.Event, items []window.Item, cp window.Checkpoint, share int, canNote bool) *compaction {
	n := len(events)
	if n == 0 || s.Window.CompactAt <= 0 {
		return nil
	}
	last := &events[n-1]
	if last.Type != event.TypeAnswer || len(last.Calls) != 0 {
		return nil
	}
	if !window.Due(items, share, s.Window.CompactAt) {
		return nil
	}
	stay, ok := window.Cut(items, share)
	if !ok {
		return nil
	}
	w := event.Window{Start: items[stay].Seq, StartTime: events[stay].Time, TokensBefore: cp.TokensBefore}
	for _, it := range items[:stay] {
		if it.Through == 0 {
			w.TokensBefore += int64(it.Tokens)
		}
	}
	c := &compaction{s: *s, req: *req, answer: *last, through: items[stay].Seq - 1, quote: events[stay].Text, window: w,
		notes: s.Window.SaveNotes && canNote && ownerSpoke(events)}
	c.req.Messages = append([]model.Message(nil), req.Messages...)
	return c
}

// summaryRequest is the answer's request continued: the answer, then the
// words asking for the summary. The cache breakpoints stay where the
// answer's request had them.
func summaryRequest(c *compaction) *model.Request {
	req := c.req
	n := len(c.req.Messages)
	req.Messages = make([]model.Message, n, n+2)
	copy(req.Messages, c.req.Messages)
	req.Messages = append(req.Messages,
		model.Message{Role: "assistant", Text: c.answer.Text, Thinking: c.answer.Thinking},
		model.Message{Role: "user", Text: prompt.SummaryAsk(c.quote, c.notes)})
	req.CacheThrough = n
	return &req
}

// maxNoteRounds is the most rounds of notes a summary saves first.
const maxNoteRounds = 2

// NotesOnly is the answer to a call other than prompt.NotesTool made while
// a summary saves notes first: it is not run.
const NotesOnly = "Only " + prompt.NotesTool + " may be called before the summary; this call was not run."

// summarize asks for the summary and appends it. Where the agent saves
// notes first, the model's calls of prompt.NotesTool are run, a round at a
// time, within the same continuation, and kept with the summary (its
// calls); any other call is answered without being run. A summary that
// fails writes nothing: the window stays where it was, and a later turn
// asks again. It runs after the answer was given, so it returns no error:
// it logs and counts one.
func (t *turn) summarize(ctx context.Context, c *compaction) {
	s := c.s
	resp, u, calls, err := t.askSummary(ctx, &s, summaryRequest(c), c.notes)
	if err == nil {
		r := *resp
		r.Usage, r.Cost = u.Usage, u.cost
		_, err = t.appendSummary(ctx, &s, c, &r, calls)
	}
	t.countSummary(&s, err, u)
	if err != nil {
		t.log().Warn("summary not written; a later turn asks again", "through", c.through, "error", err)
	}
}

// countSummary counts a summary that ended with err and used u; the
// tokens and cost of one that was not written are counted with the
// provider's too, as a written one's are when it is appended.
func (t *turn) countSummary(s *settings.Settings, err error, u spent) {
	t.r.Metrics.Summary(err, u.Input, u.Output, u.CacheRead, u.CacheWrite)
	if err != nil && u.Usage != (event.Usage{}) {
		cost, _ := t.answerCost(s, u.Usage, u.cost)
		t.r.Metrics.Provider(s.Provider()).Used(u.Input, u.Output, u.CacheRead, u.CacheWrite, cost)
	}
}

// spent is what a summary's model calls used: their tokens, and what the
// provider said they cost where it said so of every one of them.
type spent struct {
	event.Usage
	cost  model.Cost
	calls int
}

// add counts in one more call, which answered resp.
func (u *spent) add(resp *model.Response) {
	r := &resp.Usage
	u.Input, u.Output = u.Input+r.Input, u.Output+r.Output
	u.CacheRead, u.CacheWrite = u.CacheRead+r.CacheRead, u.CacheWrite+r.CacheWrite
	switch {
	case u.calls == 0:
		u.cost = resp.Cost
	case u.cost.Reported && resp.Cost.Reported:
		u.cost.USD += resp.Cost.USD
	default:
		u.cost = model.Cost{} // the calls' tokens are priced together
	}
	u.calls++
}

// askSummary asks req for a summary. With notes, the model's calls of
// prompt.NotesTool are run first, a round at a time, each request
// continuing the one before. It returns the answer holding the summary,
// what every call used and cost, and the calls made; an answer that holds
// no summary to keep is an error (ErrNoSummary).
func (t *turn) askSummary(ctx context.Context, s *settings.Settings, req *model.Request, notes bool) (*model.Response, spent, []event.Call, error) {
	var (
		u     spent
		calls []event.Call
	)
	for round := 0; ; round++ {
		resp, err := t.callModel(ctx, s, req, nil)
		if resp != nil {
			u.add(resp)
		}
		if err != nil {
			return nil, u, calls, err
		}
		if !notes || len(resp.Calls) == 0 || round >= maxNoteRounds {
			return resp, u, calls, summaryOf(resp)
		}
		calls = append(calls, resp.Calls...)
		req.Messages = append(req.Messages,
			model.Message{Role: "assistant", Text: resp.Text, Thinking: resp.Thinking, Calls: resp.Calls},
			model.Message{Role: "user", Results: t.saveNotes(ctx, resp.Calls)})
	}
}

// saveNotes runs a summary's calls of prompt.NotesTool at once and answers
// every other call with NotesOnly, unrun.
func (t *turn) saveNotes(ctx context.Context, calls []event.Call) []model.Result {
	out := make([]model.Result, len(calls))
	done := make(chan struct{}, len(calls))
	for i, c := range calls {
		out[i] = model.Result{CallID: c.ID, Name: c.Name, Text: NotesOnly, IsError: true}
		if c.Name != prompt.NotesTool {
			done <- struct{}{}
			continue
		}
		go func() {
			start := t.r.now()
			r := t.call(ctx, c)
			t.r.Metrics.Tool(t.r.now().Sub(start), r.Error != "")
			text, _ := tools.Cut(r.Text)
			if r.Error != "" {
				text, _ = tools.Cut(r.Error)
			}
			out[i] = model.Result{CallID: c.ID, Name: c.Name, Text: text, IsError: r.Error != ""}
			done <- struct{}{}
		}()
	}
	for range calls {
		<-done
	}
	return out
}

// ownerSpoke says whether the owner wrote any of the messages in events:
// notes are about the owner, so a conversation of others' messages alone
// (a teammate's, a schedule's) saves none.
func ownerSpoke(events []event.Event) bool {
	for i := range events {
		if events[i].Type == event.TypeMessage && events[i].Owner {
			return true
		}
	}
	return false
}

// summaryOf says why resp is no summary to keep, or nil.
func summaryOf(resp *model.Response) error {
	switch {
	case len(resp.Calls) > 0:
		return fmt.Errorf("%w: the model called %s", ErrNoSummary, resp.Calls[0].Name)
	case cutShort(resp.StopReason):
		return fmt.Errorf("%w: the answer ended with %q", ErrNoSummary, resp.StopReason)
	case strings.TrimSpace(resp.Text) == "":
		return fmt.Errorf("%w: the answer had no text", ErrNoSummary)
	}
	return nil
}

// cutShort says whether a provider's stop reason means the answer is not
// whole: cut at its limit, refused, or filtered.
func cutShort(reason string) bool {
	switch reason {
	case "max_tokens", "length", "refusal", "content_filter":
		return true
	}
	return false
}

// appendSummary appends the summary with what the provider reported and
// where the window starts from now on, and returns its event.
func (t *turn) appendSummary(ctx context.Context, s *settings.Settings, c *compaction, resp *model.Response, calls []event.Call) (*event.Event, error) {
	w := c.window
	e := event.Event{
		Time: t.r.now(), Type: event.TypeSummary, Text: strings.TrimSpace(resp.Text), Through: c.through, Calls: calls,
		Model: s.Model.Name, Provider: s.Provider(), ResponseID: resp.ResponseID, Usage: resp.Usage,
		LatencyMS: resp.Latency.Milliseconds(),
		Window:    &w,
	}
	e.Cost, e.CostSource = t.answerCost(s, resp.Usage, resp.Cost)
	if err := t.appendEvent(ctx, &e); err != nil {
		return nil, err // its tokens counted by countSummary
	}
	u := resp.Usage
	t.r.Metrics.Provider(e.Provider).Used(u.Input, u.Output, u.CacheRead, u.CacheWrite, e.Cost)
	return &e, nil
}
