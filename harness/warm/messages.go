package warm

import (
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/store/event"
)

// Messages gives req the model's messages of events, the window, with
// note added (prompt.WithNote) when not empty, and the wire bytes kept of
// them in provider's format; text says the calls are written as text.
// Where the turns before made the same window, only what came since is
// made and encoded. With nothing kept (nil), all of them are made, and
// the request encodes them whole.
func (c *Conv) Messages(req *model.Request, events []event.Event, provider string, text bool, note string) {
	if c == nil {
		req.Messages, req.Prefix = prompt.Messages(events), nil
		if text {
			req.Messages = prompt.CallsAsText(req.Messages)
		}
		if note != "" {
			req.Messages = prompt.WithNote(req.Messages, note)
		}
		return
	}
	m := &c.msgs
	req.Messages = m.messages(events)
	if text {
		req.Messages = m.asText(req.Messages)
	}
	if note != "" {
		req.Messages = prompt.WithNote(req.Messages, note)
	}
	m.encode(req, provider, text)
}

// messages is the model's messages made of a window, and their wire
// bytes: valid while the window starts with the event at first and holds
// the built events it was made of.
type messages struct {
	b         prompt.Builder
	first     int64 // the seq of the window's first event given to b
	built     int   // how many of the window's events b was given
	builtLast int64 // the seq of the last of them
	form      string
	prefix    model.Prefix
	text      []model.Message // the messages through the last answer, calls as text, when a request offered no tools
}

// reset empties m for another window.
func (m *messages) reset() {
	m.b = prompt.Builder{}
	m.first, m.built, m.builtLast, m.form = 0, 0, 0, ""
	m.prefix.Reset()
	clear(m.text)
	m.text = m.text[:0]
}

// asText is msgs, m's, with their calls and results written as text
// (prompt.CallsAsText), those through the last answer as written before.
// The slice shares m's memory up to the next call.
func (m *messages) asText(msgs []model.Message) []model.Message {
	k := min(len(m.text), len(msgs))
	out := append(m.text[:k], prompt.CallsAsText(msgs[k:])...)
	m.text = out[:stable(out)]
	return out
}

// stable is how many of msgs no later event changes: those through the
// last answer.
func stable(msgs []model.Message) int {
	n := len(msgs)
	for n > 0 && msgs[n-1].Role != "assistant" {
		n--
	}
	return n
}

// messages is the model's messages of events, a window, made from what m
// made of the window before when events holds that window's events and
// more.
func (m *messages) messages(events []event.Event) []model.Message {
	if m.built > 0 && (len(events) < m.built || events[0].Seq != m.first || events[m.built-1].Seq != m.builtLast) {
		m.reset()
	}
	if len(events) == 0 {
		m.reset()
		return m.b.Messages()
	}
	m.b.Add(events[m.built:])
	m.first, m.built, m.builtLast = events[0].Seq, len(events), events[len(events)-1].Seq
	return m.b.Messages()
}

// encode gives req the wire bytes of its messages through the last
// answer, in format, text saying calls are written as text: kept from the
// requests before, and only what came since encoded.
func (m *messages) encode(req *model.Request, format string, text bool) {
	form := format
	if text {
		form += "+text"
	}
	if m.form != form {
		m.prefix.Reset()
		m.form = form
	}
	if err := m.prefix.Extend(format, req.Messages[:stable(req.Messages)]); err != nil {
		m.prefix.Reset()
		m.form = ""
		req.Prefix = nil
		return // a format the model package does not keep: encoded afresh
	}
	req.Prefix = &m.prefix
}
