package turn

import (
	"errors"

	"lnk.dev/linkharness/harness/trace"
)

// A turn's spans (see package trace): the turn's own, begun as it takes
// its conversation; a model call's, a tool call's and each append's under
// it, or under the summary's while it summarizes. Off, every call below
// does nothing and allocates nothing.

// ErrToolFailed is what a tool call's span ends with when the tool
// answered with an error: a known failure, named so on the span.
var ErrToolFailed = errors.New("turn: the tool answered with an error")

// chatSpan and appendSpan start a model call's span and an append's under
// the summary's while it summarizes, else under the turn's.
func (t *turn) chatSpan(provider, model string) trace.Chat {
	if t.sum.span.On() {
		return t.sum.span.Chat(provider, model)
	}
	return t.life.span.Chat(provider, model)
}

func (t *turn) appendSpan(seq int64, bytes int, sync bool) trace.Store {
	if t.sum.span.On() {
		return t.sum.span.Append(seq, bytes, sync)
	}
	return t.life.span.Append(seq, bytes, sync)
}

// toolErr is what a tool call's span ends with: the call's failure, or
// ErrToolFailed when the tool answered with an error.
func toolErr(failed bool) error {
	if failed {
		return ErrToolFailed
	}
	return nil
}
