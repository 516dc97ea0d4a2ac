package ending

import (
	"bytes"

	"lnk.dev/linkharness/store/event"
)

// Text is an ended answer's text when the model had said nothing of it:
// every provider refuses an empty assistant message, and the next turn's
// prompt holds this one.
const Text = "[This turn was ended before it answered.]"

// mark marks an ended answer: the key "ended", true, kept among the
// event's keys the codec passes through (event.Event's Extra).
var mark = []byte(`"ended":true`)

// Mark marks e, an answer, ended.
func Mark(e *event.Event) {
	e.Extra = append([]byte(nil), mark...) // its own: a decoder reuses an event's Extra
}

// Marked says whether e is an answer written by a turn asked to end.
func Marked(e *event.Event) bool {
	return e.Type == event.TypeAnswer && bytes.Contains(e.Extra, mark)
}
