package prompt

import (
	_ "embed"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store/event"
)

// Base is Link's base: the first section of every prompt unless the spec
// replaces it.
//
//go:embed base.md
var Base string

// Section is one section of the system prompt.
type Section struct {
	Name string // one of settings.Sections
	Text string // empty: the section is left out
}

// System joins the sections that have text, in the order given, each
// trimmed of the blank lines around it and separated by one blank line: the
// system prompt of Compose, without its stable part's length.
func System(sections []Section) string {
	s, _ := Compose(sections)
	return s
}

// Speaker is who sent a message, as the head names them.
type Speaker struct {
	Name  string
	Owner bool
	ID    string // the sender's id: run:<id> is a background command's end
}

// Head is a message's head: the date and time in the machine's zone (where a
// personal agent's owner is), the connection, and the speaker only when it is
// the owner, since a message from others already says who, quoted, or when
// it is Link itself: a background command's end comes from run:<id>, a
// schedule from schedule:<id>. It is kept with the message, so the message
// reads the same at every later turn.
func Head(t time.Time, connection string, from Speaker) string {
	var b strings.Builder
	b.WriteByte('[')
	b.WriteString(t.Format("Mon 2006-01-02 15:04 MST"))
	if connection != "" {
		b.WriteString(" · ")
		b.WriteString(connection)
	}
	if from.Owner {
		b.WriteString(" · ")
		if from.Name != "" {
			b.WriteString(from.Name)
			b.WriteString(", ")
		}
		b.WriteString("your owner")
	} else if what := linkSpeaker(from.ID); what != "" {
		b.WriteString(" · ")
		b.WriteString(from.ID)
		b.WriteString(", ")
		b.WriteString(what)
	}
	b.WriteByte(']')
	return b.String()
}

// linkSpeaker says what a sender id of Link's own stands for, or "".
func linkSpeaker(id string) string {
	switch {
	case strings.HasPrefix(id, "run:") && len(id) > len("run:"):
		return "the end of a command you started in the background"
	case strings.HasPrefix(id, "schedule:") && len(id) > len("schedule:"):
		return "a schedule of yours"
	}
	return ""
}

// Messages turns a window's events, oldest first, into the model's
// messages: a message is the user's, its head then its text; a summary
// (the one opening the window) is the user's too, after SummaryHead; an answer is
// the assistant's, with its thinking and its calls; a tool's result answers
// its call in the user's next message. Consecutive user messages become one,
// since providers want the two roles in turn. A call left without a result
// (a turn cut short) is answered as unanswered, so the prompt stays valid.
func Messages(events []event.Event) []model.Message {
	var b Builder
	b.Add(events)
	return b.Messages()
}

// Builder makes the messages of Messages a few events at a time, as a
// window grows, so what it made of the events before is not made again:
// the events given to its Adds, in turn, are the window's, and Messages
// returns what Messages of them all returns. Its zero value holds no
// event. A Builder is not safe for concurrent use.
type Builder struct {
	out  []model.Message
	open []event.Call // calls of the last answer not yet answered
}

// Len is how many messages b has made so far, the last one still open to
// the events after.
func (b *Builder) Len() int { return len(b.out) }

// Add takes the window's next events.
func (b *Builder) Add(events []event.Event) {
	if b.out == nil {
		// About a message an event (fewer where user messages join; one
		// more where a call is left unanswered): made at once, rarely grown.
		b.out = make([]model.Message, 0, len(events)+1)
	}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case event.TypeMessage:
			b.closeCalls()
			m := b.user()
			text := e.Text
			if e.Head != "" {
				text = e.Head + "\n" + e.Text
			}
			if m.Text != "" {
				m.Text += "\n\n" + text
			} else {
				m.Text = text
			}
		case event.TypeSummary:
			// The summary opening the window: the user's role, joined with
			// the message after it, since a window starts with the user.
			b.closeCalls()
			m := b.user()
			if m.Text != "" {
				m.Text += "\n\n"
			}
			m.Text += SummaryHead + "\n" + e.Text
		case event.TypeAnswer:
			b.closeCalls()
			b.out = append(b.out, model.Message{Role: "assistant", Text: e.Text, Thinking: e.Thinking, Calls: e.Calls})
			b.open = append(b.open[:0:0], e.Calls...)
		case event.TypeResult:
			k := -1
			for j, c := range b.open {
				if c.ID == e.CallID {
					k = j
					break
				}
			}
			if k < 0 {
				continue // a result for no open call: the window starts after its call
			}
			b.open = append(b.open[:k:k], b.open[k+1:]...)
			text := e.Text
			if e.Error != "" && text == "" {
				text = e.Error
			}
			m := b.user()
			// The results are the message's own, never another's: a
			// message handed out by Messages may share the one before.
			m.Results = append(m.Results[:len(m.Results):len(m.Results)], model.Result{CallID: e.CallID, Name: e.Name, Text: text, IsError: e.Error != ""})
		}
	}
}

// Messages returns the messages of the events added so far, each call left
// without a result answered as unanswered. The messages are shared with b
// and with what it returns next: change none of them (a slice appended to
// is one's own). The events added next may change the last of them, the
// user's message they join, and never the others.
func (b *Builder) Messages() []model.Message {
	out := b.out[:len(b.out):len(b.out)]
	if len(b.open) > 0 {
		n := len(out)
		if n > 0 && out[n-1].Role == "user" {
			last := out[n-1]
			out = append(out[:n-1:n-1], last)
		} else {
			out = append(out, model.Message{Role: "user"})
		}
		last := &out[len(out)-1]
		last.Results = last.Results[:len(last.Results):len(last.Results)]
		for _, c := range b.open {
			last.Results = append(last.Results, model.Result{CallID: c.ID, Name: c.Name, Text: Unanswered, IsError: true})
		}
	}
	// A window never starts with the assistant's words.
	for len(out) > 0 && out[0].Role != "user" {
		out = out[1:]
	}
	return out
}

// closeCalls answers the open calls as unanswered, before an event that
// is not their result.
func (b *Builder) closeCalls() {
	if len(b.open) == 0 {
		return
	}
	last := b.user()
	for _, c := range b.open {
		last.Results = append(last.Results, model.Result{CallID: c.ID, Name: c.Name, Text: Unanswered, IsError: true})
	}
	b.open = b.open[:0]
}

// user is the last message when it is the user's, or a new one of theirs.
func (b *Builder) user() *model.Message {
	if n := len(b.out); n > 0 && b.out[n-1].Role == "user" {
		return &b.out[n-1]
	}
	b.out = append(b.out, model.Message{Role: "user"})
	return &b.out[len(b.out)-1]
}

// Unanswered is the answer given to a call left without one.
const Unanswered = "This call was not answered: the turn that made it ended first."

// EventTokens is an event's rough share of the prompt, in tokens (see
// window.Tokens): its head, text, thinking and calls; a summary's includes
// the words that open it (SummaryHead).
func EventTokens(e *event.Event) int {
	n := window.Tokens(e.Head) + window.Tokens(e.Text) + len(e.Thinking)/4
	for _, c := range e.Calls {
		n += window.Tokens(c.Name) + len(c.Args)/4
	}
	if e.Type == event.TypeSummary {
		n += summaryHeadTokens
	}
	return n + 4
}

// summaryHeadTokens is the rough count of the words opening a summary.
var summaryHeadTokens = window.Tokens(SummaryHead)

// ToolsTokens is the rough share of the prompt the tools offered take:
// their names, descriptions and schemas.
func ToolsTokens(ts []model.Tool) int {
	n := 0
	for i := range ts {
		n += window.Tokens(ts[i].Name) + window.Tokens(ts[i].Description) + len(ts[i].Schema)/4 + 4
	}
	return n
}
