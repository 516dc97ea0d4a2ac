package prompt

import (
	"strings"

	"lnk.dev/linkharness/harness/model"
)

// CallsAsText is msgs with every tool call and result written as text, for
// a request that offers no tools (the tools gone, or the conversation
// narrowed to none): providers refuse calls and results without tools to go
// with them, and the model still sees what was done. Thinking that led to a
// call goes with it, since its signature holds only beside the call. msgs is
// not changed.
func CallsAsText(msgs []model.Message) []model.Message {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if len(m.Calls) == 0 && len(m.Results) == 0 {
			continue
		}
		var b strings.Builder
		switch m.Role {
		case "assistant":
			b.WriteString(m.Text)
			for _, c := range m.Calls {
				sep(&b)
				b.WriteString("[called ")
				b.WriteString(c.Name)
				b.WriteByte(' ')
				if len(c.Args) > 0 {
					b.Write(c.Args)
				} else {
					b.WriteString("{}")
				}
				b.WriteByte(']')
			}
			out[i].Thinking = nil
		default:
			for _, r := range m.Results {
				sep(&b)
				b.WriteString("[")
				b.WriteString(r.Name)
				if r.IsError {
					b.WriteString(" answered with an error]\n")
				} else {
					b.WriteString(" answered]\n")
				}
				b.WriteString(r.Text)
			}
			if m.Text != "" {
				sep(&b)
				b.WriteString(m.Text)
			}
		}
		out[i].Text, out[i].Calls, out[i].Results = b.String(), nil, nil
	}
	return out
}

func sep(b *strings.Builder) {
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
}

// WithNote is msgs with note added to the last user message, or as a user
// message of its own after an assistant's.
func WithNote(msgs []model.Message, note string) []model.Message {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != "user" {
		return append(msgs, model.Message{Role: "user", Text: note})
	}
	out := append([]model.Message(nil), msgs...)
	if out[n-1].Text != "" {
		out[n-1].Text += "\n\n" + note
	} else {
		out[n-1].Text = note
	}
	return out
}
