package server

import (
	"fmt"
	"net/http"
	"testing"

	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
)

// What a conversation's turn kept for its next is used by the next, and
// let go of when the process goes idle (the release the idle timer calls) and when its agent
// leaves, so an idle or gone agent holds no conversation open; between
// turns that follow each other it is kept.
func TestIdleReleasesWarm(t *testing.T) {
	w := &warm.Cache{}
	f := newFixture(t, nil, func(r *turn.Runner) { r.Warm = w })
	f.srv.warm = w
	i := 0
	send := func() {
		t.Helper()
		i++
		if code, body := f.post(t, "/v1/agents/ada/chats/telegram:42/messages", key, fmt.Sprintf(`{"id":"m%d","text":"hi %d"}`, i, i)); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
	}
	send()
	send()
	if n, _ := w.Len(); n != 1 {
		t.Fatalf("%d conversations kept after two turns, want 1", n)
	}
	// Told as the server tells it, the answer leaves the conversation as
	// its turn left it: the next turn reads nothing of the store.
	m := f.srv.agent("ada").Runner.Metrics
	before := m.BytesRead()
	send()
	if n := m.BytesRead() - before; n != 0 {
		t.Errorf("a turn after the answer was told read %d bytes of the conversation, want none", n)
	}
	f.srv.turns.Wait() // a turn keeps its conversation after its caller is told
	f.srv.release()
	if n, b := w.Len(); n != 0 || b != 0 {
		t.Fatalf("%d conversations (%d bytes) kept once idle", n, b)
	}
	send()
	if n, _ := w.Len(); n != 1 {
		t.Fatalf("%d conversations kept after a turn, want 1", n)
	}
	f.srv.Remove("ada")
	if n, _ := w.Len(); n != 0 {
		t.Fatalf("%d conversations kept for an agent gone", n)
	}
}
