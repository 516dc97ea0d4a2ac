package hometest

import (
	"fmt"
	"testing"

	"lnk.dev/linkharness/store/event"
)

// Share has callers callers send each messages apiece into one
// conversation at once, the messages of each alternating between two
// senders (send's by, 0 or 1), as two processes serving one home would
// take them, their ids c0-0, c0-1 and on. It returns the seq each was told
// of its answer, by id; a message send fails is reported on t and left
// out.
func Share(t testing.TB, callers, each int, send func(by int, id string) (int64, error)) map[string]int64 {
	t.Helper()
	type told struct {
		id  string
		seq int64
		err error
	}
	out := make(chan told, callers*each)
	for c := range callers {
		go func() {
			for i := range each {
				id := fmt.Sprintf("c%d-%d", c, i)
				seq, err := send((c+i)%2, id)
				out <- told{id, seq, err}
			}
		}()
	}
	seqs := map[string]int64{}
	for range callers * each {
		o := <-out
		if o.err != nil {
			t.Errorf("message %s: %v", o.id, o.err)
			continue
		}
		seqs[o.id] = o.seq
	}
	return seqs
}

// CheckShared checks ev, the events of a conversation callers wrote n
// messages into at once, each told the seq of its answer (told, by the
// message's id, as Share returns them): the seqs run from 1 without a
// gap, every message is written once, and every one is told an answer
// after it; the conversation ends with an answer.
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
