package prompt

import (
	"encoding/json"
	"flag"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/internal/golden"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/store/event"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestHead(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 45, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		conn string
		from Speaker
		want string
	}{
		{"telegram", Speaker{Name: "Ada", Owner: true}, "[Wed 2026-12-02 10:45 CET · telegram · Ada, your owner]"},
		{"telegram", Speaker{Name: "Bob"}, "[Wed 2026-12-02 10:45 CET · telegram]"},
		{"", Speaker{Owner: true}, "[Wed 2026-12-02 10:45 CET · your owner]"},
	} {
		if got := Head(at, tc.conn, tc.from); got != tc.want {
			t.Errorf("Head(%q, %+v) = %q, want %q", tc.conn, tc.from, got, tc.want)
		}
	}
}

func TestSystem(t *testing.T) {
	got := System([]Section{{"base", "\nBase.\n\n"}, {"model", ""}, {"instruction", "  \n"}, {"notes", "# Your notes\n- a\n"}})
	if want := "Base.\n\n# Your notes\n- a"; got != want {
		t.Fatalf("System = %q, want %q", got, want)
	}
}

// The messages a window's events become, as bytes: a golden file, since
// what the model is sent must stay the same turn after turn.
func TestMessagesGolden(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 45, 0, 0, time.UTC)
	events := []event.Event{
		{Seq: 1, Time: at, Type: event.TypeAnswer, Text: "an answer before the window's first message is dropped"},
		{Seq: 2, Time: at, Type: event.TypeMessage, Head: "[Wed 2026-12-02 10:45 UTC · telegram · Ada, your owner]", Text: "find my notes"},
		{Seq: 3, Time: at, Type: event.TypeAnswer, Text: "Looking.", Calls: []event.Call{
			{ID: "c1", Name: "memory__search", Args: []byte(`{"q":"notes"}`)},
			{ID: "c2", Name: "memory__read", Args: []byte(`{"path":"a"}`)},
		}},
		{Seq: 4, Time: at, Type: event.TypeResult, CallID: "c1", Name: "memory__search", Text: "two notes"},
		// c2 was never answered: the turn was cut short.
		{Seq: 5, Time: at, Type: event.TypeMessage, Head: "[Wed 2026-12-02 10:46 UTC · telegram · Ada, your owner]", Text: "well?"},
		{Seq: 6, Time: at, Type: event.TypeMessage, Head: "[Wed 2026-12-02 10:46 UTC · telegram]", Text: "Bob: me too"},
		{Seq: 7, Time: at, Type: event.TypeResult, CallID: "zz", Text: "a result for no open call"},
		{Seq: 8, Time: at, Type: event.TypeAnswer, Text: "Two notes.", Thinking: []byte(`[{"thinking":"t","signature":"s"}]`)},
		{Seq: 9, Time: at, Type: event.TypeMessage, Text: "thanks"},
	}
	msgs := Messages(events)
	got, err := json.MarshalIndent(msgs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "messages.json", append(got, '\n'), *update)
	if msgs[0].Role != "user" {
		t.Errorf("a window starts with %q", msgs[0].Role)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == msgs[i-1].Role {
			t.Errorf("messages %d and %d are both %q", i-1, i, msgs[i].Role)
		}
	}
	var unanswered []model.Result
	for _, m := range msgs {
		for _, r := range m.Results {
			if r.Text == Unanswered {
				unanswered = append(unanswered, r)
			}
		}
	}
	if len(unanswered) != 1 || unanswered[0].CallID != "c2" {
		t.Errorf("unanswered calls: %+v, want c2 alone", unanswered)
	}
}
