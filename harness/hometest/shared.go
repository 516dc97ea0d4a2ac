package hometest

import (
	"testing"

	"lnk.dev/linkharness/store/event"
)

// CheckShared checks ev, the events of a conversation callers wrote n
// messages into at once, each told the seq of its answer (told, by the
// message's id): the seqs run from 1 without a gap, every message is
// written once, and every one is told an answer after it; the
// conversation ends with an answer.
func CheckShared(t testing.TB, ev []event.Event, told map[string]int64, n int) {
	t.Helper()
	at := map[string]int64{}
	for i, e := range ev {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		if e.Type != event.TypeMessage {
			continue
		}
		if _, twice := at[e.ID]; twice {
			t.Errorf("message %s written twice", e.ID)
		}
		at[e.ID] = e.Seq
	}
	if len(at) != n {
		t.Errorf("%d messages written, want %d", len(at), n)
	}
	for id, seq := range told {
		if seq <= at[id] || seq > int64(len(ev)) || ev[seq-1].Type != event.TypeAnswer {
			t.Errorf("message %s (seq %d) told seq %d", id, at[id], seq)
		}
	}
	if len(ev) == 0 || ev[len(ev)-1].Type != event.TypeAnswer {
		t.Errorf("the conversation does not end with an answer")
	}
}
