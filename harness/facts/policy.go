package facts

import (
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/event"
)

// Window is the window's size in tokens for the model m under the spec's
// [window], and where it came from. A max the user or a team set (MaxSet)
// is taken as set, whatever is known of the model: the only limit then is
// the provider refusing the prompt. Otherwise the model's window, in the
// order its facts were found (the user's file, a runtime, Link's), held to
// Link's max if it has one; a model nobody described gets [window]
// unknown, a small window rather than a guess that overflows.
func Window(m *Model, w settings.Window) (int, Source) {
	if w.MaxSet && w.Max > 0 {
		return w.Max, Agent
	}
	size, from := w.Unknown, Spec
	if m.Window.Known() {
		size, from = m.Window.Value, m.Window.From
	}
	if w.Max > 0 && w.Max < size {
		return w.Max, Spec
	}
	return size, from
}

// AnswerRoom is the tokens kept for the answer in a window of size tokens:
// [model] answer, else [window] answer's share of the window, at most the
// model's longest answer when known.
func AnswerRoom(m *Model, s *settings.Settings, size int) int {
	room := s.Model.Answer
	if room <= 0 {
		room = int(s.Window.Answer * float64(size))
	}
	if m.Answer.Known() && room > m.Answer.Value {
		room = m.Answer.Value
	}
	return room
}

// Cost is what u cost in USD at m's prices; a price nobody described
// counts as nothing.
func Cost(m *Model, u event.Usage) float64 {
	return (float64(u.Input)*m.Input.Value +
		float64(u.Output)*m.Output.Value +
		float64(u.CacheRead)*m.CacheRead.Value +
		float64(u.CacheWrite)*m.CacheWrite.Value) / 1e6
}
