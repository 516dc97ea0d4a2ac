package summary

import (
	"strconv"
	"strings"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store/event"
)

// MaxNoteRounds is the most rounds of notes a summary saves first.
const MaxNoteRounds = 2

// NotesOnly is the answer to a call other than prompt.NotesTool made while
// a summary saves notes first: it is not run.
const NotesOnly = "Only " + prompt.NotesTool + " may be called before the summary; this call was not run."

// Ask is what a turn that answered needs to ask for the summary after its
// answer.
type Ask struct {
	Settings settings.Settings
	Request  model.Request // the answer's request, as it was sent
	Answer   event.Event   // the answer, which calls nothing
	Through  int64         // the last seq the summary covers
	Quote    string        // the text of the first message that stays
	Window   event.Window  // where the window starts once the summary is written
	Notes    bool          // the model may save notes first ([window] save_notes)
}

// Due says whether a turn summarizes after its answer, and what it asks:
// events are the window after the answer (its summary first, as sent, then
// all the turn appended), items their items (window.Items), req the
// request the answer was made with, cp where the window started, share the
// conversation's share of the window; canNote says the agent can write
// notes (its tools offer prompt.NotesTool). Nil: none is due.
func Due(s *settings.Settings, req *model.Request, events []event.Event, items []window.Item, cp window.Checkpoint, share int, canNote bool) *Ask {
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
	c := &Ask{Settings: *s, Request: *req, Answer: *last, Through: items[stay].Seq - 1, Quote: events[stay].Text, Window: w,
		Notes: s.Window.SaveNotes && canNote && OwnerSpoke(events)}
	c.Request.Messages = append([]model.Message(nil), req.Messages...)
	return c
}

// Continued is the answer's request continued: the answer, then the words
// asking for the summary. The cache breakpoints stay where the answer's
// request had them.
func (c *Ask) Continued() *model.Request {
	req := c.Request
	n := len(c.Request.Messages)
	req.Messages = make([]model.Message, n, n+2)
	copy(req.Messages, c.Request.Messages)
	req.Messages = append(req.Messages,
		model.Message{Role: "assistant", Text: c.Answer.Text, Thinking: c.Answer.Thinking},
		model.Message{Role: "user", Text: prompt.SummaryAsk(c.Quote, c.Notes)})
	req.CacheThrough = n
	return &req
}

// OwnerSpoke says whether the owner wrote any of the messages in events:
// notes are about the owner, so a conversation of others' messages alone
// (a teammate's, a schedule's) saves none.
func OwnerSpoke(events []event.Event) bool {
	for i := range events {
		if events[i].Type == event.TypeMessage && events[i].Owner {
			return true
		}
	}
	return false
}

// Why says why resp is no summary to keep, or "" when it is one.
func Why(resp *model.Response) string {
	switch {
	case len(resp.Calls) > 0:
		return "the model called " + resp.Calls[0].Name
	case cutShort(resp.StopReason):
		return "the answer ended with " + strconv.Quote(resp.StopReason)
	case strings.TrimSpace(resp.Text) == "":
		return "the answer had no text"
	}
	return ""
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

// Spent is what a summary's model calls used: their tokens, and what the
// provider said they cost where it said so of every one of them.
type Spent struct {
	event.Usage
	Cost  model.Cost
	calls int
}

// Add counts in one more call, which answered resp.
func (u *Spent) Add(resp *model.Response) {
	r := &resp.Usage
	u.Input, u.Output = u.Input+r.Input, u.Output+r.Output
	u.CacheRead, u.CacheWrite = u.CacheRead+r.CacheRead, u.CacheWrite+r.CacheWrite
	switch {
	case u.calls == 0:
		u.Cost = resp.Cost
	case u.Cost.Reported && resp.Cost.Reported:
		u.Cost.USD += resp.Cost.USD
	default:
		u.Cost = model.Cost{} // the calls' tokens are priced together
	}
	u.calls++
}
