package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/summary"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/store/event"
)

// summaryState is what the turn holds of its window's room.
type summaryState struct {
	share    int           // the conversation's share of the window, in rough tokens
	madeRoom bool          // the window outgrew its room between rounds, and what left was summarized or dropped
	after    *summary.Ask  // the summary to ask for once the answer is given; nil when none is due
	span     trace.Summary // the summary's span while it summarizes, its calls' and append's parent
}

// Summaries (see package summary, which decides when one is due and what
// is asked): once the turn's answer is given, still holding the
// conversation, it asks the model for the summary, runs the notes it saves
// first, and appends the summary, which the next turns' window starts with
// (see readWindow).

// ErrNoSummary comes, wrapped with why, when the model answered a summary's
// request with no summary to keep: no text, a refusal, an answer cut at its
// limit, or a tool call. Nothing is written.
var ErrNoSummary = errors.New("turn: no summary")

// summarize asks for the summary and appends it. Where the agent saves
// notes first, the model's calls of prompt.NotesTool are run, a round at a
// time, within the same continuation, and kept with the summary (its
// calls); any other call is answered without being run. A summary that
// fails writes nothing: the window stays where it was, and a later turn
// asks again. It runs after the answer was given, so it returns no error:
// it logs and counts one.
func (t *turn) summarize(ctx context.Context, c *summary.Ask) {
	t.sum.span = t.life.span.Summary()
	defer func() { t.sum.span = trace.Summary{} }()
	s := c.Settings
	resp, u, calls, err := t.askSummary(ctx, &s, c.Continued(), c.Notes)
	if err == nil {
		r := *resp
		r.Usage, r.Cost = u.Usage, u.Cost
		_, err = t.appendSummary(ctx, &s, c, &r, calls)
	}
	t.countSummary(&s, err, u)
	t.sum.span.End(err)
	if err != nil {
		t.log().Warn("summary not written; a later turn asks again", "through", c.Through, "error", err)
	}
}

// countSummary counts a summary that ended with err and used u; the
// tokens and cost of one that was not written are counted with the
// provider's too, as a written one's are when it is appended.
func (t *turn) countSummary(s *settings.Settings, err error, u summary.Spent) {
	t.r.Metrics.Summary(err, u.Input, u.Output, u.CacheRead, u.CacheWrite)
	if err != nil && u.Usage != (event.Usage{}) {
		cost, _ := t.facts().Cost(s, u.Usage, u.Cost)
		t.r.Metrics.Provider(s.Provider()).Used(u.Input, u.Output, u.CacheRead, u.CacheWrite, cost)
	}
}

// askSummary asks req for a summary. With notes, the model's calls of
// prompt.NotesTool are run first, a round at a time, each request
// continuing the one before. It returns the answer holding the summary,
// what every call used and cost, and the calls made; an answer that holds
// no summary to keep is an error (ErrNoSummary).
func (t *turn) askSummary(ctx context.Context, s *settings.Settings, req *model.Request, notes bool) (*model.Response, summary.Spent, []event.Call, error) {
	var (
		u     summary.Spent
		calls []event.Call
	)
	for round := 0; ; round++ {
		resp, err := t.callModel(ctx, s, req, nil)
		if resp != nil {
			u.Add(resp)
		}
		if err != nil {
			return nil, u, calls, err
		}
		if !notes || len(resp.Calls) == 0 || round >= summary.MaxNoteRounds {
			return resp, u, calls, summaryOf(resp)
		}
		calls = append(calls, resp.Calls...)
		req.Messages = append(req.Messages,
			model.Message{Role: "assistant", Text: resp.Text, Thinking: resp.Thinking, Calls: resp.Calls},
			model.Message{Role: "user", Results: t.saveNotes(ctx, resp.Calls)})
	}
}

// saveNotes runs a summary's calls of prompt.NotesTool at once and answers
// every other call with summary.NotesOnly, unrun.
func (t *turn) saveNotes(ctx context.Context, calls []event.Call) []model.Result {
	out := make([]model.Result, len(calls))
	done := make(chan struct{}, len(calls))
	for i, c := range calls {
		out[i] = model.Result{CallID: c.ID, Name: c.Name, Text: summary.NotesOnly, IsError: true}
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

// summaryOf says why resp is no summary to keep (ErrNoSummary), or nil.
func summaryOf(resp *model.Response) error {
	if why := summary.Why(resp); why != "" {
		return fmt.Errorf("%w: %s", ErrNoSummary, why)
	}
	return nil
}

// appendSummary appends the summary with what the provider reported and
// where the window starts from now on, and returns its event.
func (t *turn) appendSummary(ctx context.Context, s *settings.Settings, c *summary.Ask, resp *model.Response, calls []event.Call) (*event.Event, error) {
	w := c.Window
	e := event.Event{
		Time: t.r.now(), Type: event.TypeSummary, Text: strings.TrimSpace(resp.Text), Through: c.Through, Calls: calls,
		Model: s.Model.Name, Provider: s.Provider(), ResponseID: resp.ResponseID, Usage: resp.Usage,
		LatencyMS: resp.Latency.Milliseconds(),
		Window:    &w,
	}
	e.Cost, e.CostSource = t.facts().Cost(s, resp.Usage, resp.Cost)
	if err := t.appendEvent(ctx, &e); err != nil {
		return nil, err // its tokens counted by countSummary
	}
	u := resp.Usage
	t.r.Metrics.Provider(e.Provider).Used(u.Input, u.Output, u.CacheRead, u.CacheWrite, e.Cost)
	return &e, nil
}
