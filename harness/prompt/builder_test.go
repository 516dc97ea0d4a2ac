package prompt

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// randomEvents is a window's events: messages, answers with calls, the
// calls' results (some missing, some for no call), now and then a summary.
func randomEvents(rng *rand.Rand, n int) []event.Event {
	var (
		out  []event.Event
		open []event.Call
	)
	for i := range n {
		seq := int64(i + 1)
		switch k := rng.IntN(10); {
		case k < 4:
			out = append(out, event.Event{Seq: seq, Type: event.TypeMessage, Head: "[head]", Text: fmt.Sprintf("message %d", seq)})
		case k < 7:
			e := event.Event{Seq: seq, Type: event.TypeAnswer, Text: fmt.Sprintf("answer %d", seq)}
			for j := range rng.IntN(3) {
				e.Calls = append(e.Calls, event.Call{ID: fmt.Sprintf("c%d.%d", seq, j), Name: "web__echo", Args: []byte(`{}`)})
			}
			open = e.Calls
			out = append(out, e)
		case k < 9:
			id := "nobody"
			if len(open) > 0 && rng.IntN(4) != 0 {
				id, open = open[0].ID, open[1:]
			}
			e := event.Event{Seq: seq, Type: event.TypeResult, CallID: id, Name: "web__echo", Text: fmt.Sprintf("result %d", seq)}
			if rng.IntN(4) == 0 {
				e.Text, e.Error = "", "it failed"
			}
			out = append(out, e)
		default:
			out = append(out, event.Event{Seq: seq, Type: event.TypeSummary, Text: fmt.Sprintf("summary %d", seq)})
		}
	}
	return out
}

// A Builder given a window's events a few at a time makes, after each
// Add, the messages Messages makes of all of them so far; and of the
// messages it handed out before, the events added after change none but
// the last.
func TestBuilderSameAsMessages(t *testing.T) {
	rng := rand.New(rand.NewPCG(storetest.Seed(t), 0))
	for try := range 500 {
		events := randomEvents(rng, 1+rng.IntN(40))
		var (
			b    Builder
			gave [][]model.Message // what Messages returned
			was  [][]model.Message // and a copy of it then
		)
		for k := 0; k < len(events); {
			next := min(len(events), k+1+rng.IntN(5))
			b.Add(events[k:next])
			k = next
			got, want := b.Messages(), Messages(events[:k])
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("try %d, %d events: the builder made\n%+v\nMessages made\n%+v", try, k, got, want)
			}
			for i := range gave {
				if n := len(gave[i]); n > 0 && !reflect.DeepEqual(gave[i][:n-1], was[i][:n-1]) {
					t.Fatalf("try %d, %d events: messages handed out before were changed", try, k)
				}
			}
			gave, was = append(gave, got), append(was, deepCopy(got))
		}
	}
}

// deepCopy is msgs with their own calls and results.
func deepCopy(msgs []model.Message) []model.Message {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Calls = append([]event.Call(nil), m.Calls...)
		out[i].Results = append([]model.Result(nil), m.Results...)
		if m.Calls == nil {
			out[i].Calls = nil
		}
		if m.Results == nil {
			out[i].Results = nil
		}
	}
	return out
}
