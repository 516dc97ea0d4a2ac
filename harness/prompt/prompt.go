package prompt

import (
	_ "embed"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/model"
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
	// About a message an event (fewer where user messages join; one more
	// where a call is left unanswered): made at once, rarely grown.
	out := make([]model.Message, 0, len(events)+1)
	var open []event.Call // calls of the last answer not yet answered
	closeCalls := func() {
		if len(open) == 0 {
			return
		}
		last := &out[len(out)-1]
		if last.Role != "user" {
			out = append(out, model.Message{Role: "user"})
			last = &out[len(out)-1]
		}
		for _, c := range open {
			last.Results = append(last.Results, model.Result{CallID: c.ID, Name: c.Name, Text: Unanswered, IsError: true})
		}
		open = nil
	}
	user := func() *model.Message {
		if n := len(out); n > 0 && out[n-1].Role == "user" {
			return &out[n-1]
		}
		out = append(out, model.Message{Role: "user"})
		return &out[len(out)-1]
	}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case event.TypeMessage:
			closeCalls()
			m := user()
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
			closeCalls()
			m := user()
			if m.Text != "" {
				m.Text += "\n\n"
			}
			m.Text += SummaryHead + "\n" + e.Text
		case event.TypeAnswer:
			closeCalls()
			out = append(out, model.Message{Role: "assistant", Text: e.Text, Thinking: e.Thinking, Calls: e.Calls})
			open = append([]event.Call(nil), e.Calls...)
		case event.TypeResult:
			k := -1
			for j, c := range open {
				if c.ID == e.CallID {
					k = j
					break
				}
			}
			if k < 0 {
				continue // a result for no open call: the window starts after its call
			}
			open = append(open[:k], open[k+1:]...)
			text := e.Text
			if e.Error != "" && text == "" {
				text = e.Error
			}
			m := user()
			m.Results = append(m.Results, model.Result{CallID: e.CallID, Name: e.Name, Text: text, IsError: e.Error != ""})
		}
	}
	closeCalls()
	// A window never starts with the assistant's words.
	for len(out) > 0 && out[0].Role != "user" {
		out = out[1:]
	}
	return out
}

// Unanswered is the answer given to a call left without one.
const Unanswered = "This call was not answered: the turn that made it ended first."
