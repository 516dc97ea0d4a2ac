package hometest

import (
	"fmt"
	"strings"

	"lnk.dev/linkharness/store/event"
)

// Window fills, for WriteLog, the events of a conversation whose window
// holds every one: messages and answers in turn, a message with the id
// w<seq>, head and about 100 bytes of text, an answer by claude-opus-5-5
// of "fine, thank you. " said words times, its window starting at the
// first event.
func Window(head string, words int) func(e *event.Event) {
	return func(e *event.Event) {
		if e.Seq%2 == 1 {
			e.Type, e.ID, e.Head = event.TypeMessage, fmt.Sprintf("w%d", e.Seq), head
			e.Text = fmt.Sprintf("message %d: %s", e.Seq, strings.Repeat("how are you today? ", 5))
		} else {
			e.Type, e.Model, e.Provider = event.TypeAnswer, "claude-opus-5-5", "anthropic"
			e.Text = fmt.Sprintf("answer %d: %s", e.Seq, strings.Repeat("fine, thank you. ", words))
			e.Window = &event.Window{Start: 1}
		}
	}
}
