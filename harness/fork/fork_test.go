package fork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// runner is an agent ada whose model, named model, is the scripted one,
// its conversations kept as logs.
func runner(t *testing.T, model string) (*turn.Runner, *scripted.Server) {
	t.Helper()
	srv, proxy := hometest.Model(t, nil)
	s := settings.Defaults()
	s.Model.Name = model
	dir, env := hometest.Agent(t, s, proxy)
	open := func(dir, kind string) (store.Conversation, error) {
		if kind != "" && kind != "log" {
			return nil, fmt.Errorf("the tests keep conversations as logs, not %q", kind)
		}
		return eventlog.Open(dir)
	}
	return &turn.Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return env[k] },
		HTTP: &http.Client{}, Metrics: &metrics.Agent{Name: "ada"}, Open: open}, srv
}

// rawEvents reads a conversation's events as stored.
func rawEvents(t *testing.T, r *turn.Runner, thread string) [][]byte {
	t.Helper()
	conv, err := r.Conversation(thread)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var out [][]byte
	err = conv.Read(context.Background(), 1, store.Forward, func(_ int64, ev []byte) bool {
		out = append(out, append([]byte(nil), ev...))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readEvents reads a conversation's events, decoded.
func readEvents(t *testing.T, r *turn.Runner, thread string) []event.Event {
	t.Helper()
	var out []event.Event
	var dec event.Decoder
	for _, ev := range rawEvents(t, r, thread) {
		var e event.Event
		if err := dec.Decode(ev, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// commonPrefix is how many bytes a and b begin with alike.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// A fork holds the old conversation's events before the owner message it
// replaces, byte for byte (the first naming the new thread), then the new
// message and its answer; its first request to the model is the old one's
// up to that message, so the provider's cache holds; a fork of a fork is
// made the same way; and a before that is not an owner message is refused
// with why, writing nothing.
func TestFork(t *testing.T) {
	for _, model := range []string{"anthropic/claude-opus-5-5", "openai/gpt-5.2"} {
		t.Run(model, func(t *testing.T) { testFork(t, model) })
	}
}

func testFork(t *testing.T, model string) {
	r, m := runner(t, model)
	ctx := context.Background()
	for _, text := range []string{"one", "two", "three"} {
		if _, err := r.Message(ctx, "t", turn.Message{ID: text, Text: text, Owner: true, From: event.Sender{ID: "7", Name: "Ada"}, Connection: "web"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Message(ctx, "t", turn.Message{Text: "not the owner", From: event.Sender{Name: "Bob"}}, nil); err != nil {
		t.Fatal(err)
	}
	old := rawEvents(t, r, "t")
	oldReq := m.Requests()[2] // the one answering "three", seq 5

	a, err := Make(ctx, r, "t", Fork{Before: 5, Text: "THREE"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Thread != "t:fork5" || a.Seq != 6 {
		t.Fatalf("fork answer %+v, want thread t:fork5, seq 6", a)
	}
	forked := rawEvents(t, r, "t:fork5")
	if len(forked) != 6 {
		t.Fatalf("the fork has %d events, want 6", len(forked))
	}
	for i := 1; i < 4; i++ {
		if !bytes.Equal(forked[i], old[i]) {
			t.Errorf("event %d:\n%s\nwant the old one's bytes:\n%s", i+1, forked[i], old[i])
		}
	}
	want := bytes.Replace(old[0], []byte(`"thread":"t"`), []byte(`"thread":"t:fork5"`), 1)
	want = append(want[:len(want)-1], `,"cache_thread":"t"}`...) // its requests carry t's cache key
	if !bytes.Equal(forked[0], want) {
		t.Errorf("event 1:\n%s\nwant:\n%s", forked[0], want)
	}
	evs := readEvents(t, r, "t:fork5")
	if e := evs[4]; e.Type != event.TypeMessage || e.Text != "THREE" || !e.Owner || e.From.Name != "Ada" || e.Connection != "web" {
		t.Errorf("the new message %+v", e)
	}
	if evs[5].Type != event.TypeAnswer {
		t.Errorf("the fork's last event %+v, want its answer", evs[5])
	}
	reqs := m.Requests()
	forkReq := reqs[len(reqs)-1] // the fork's first, and only, request
	if !bytes.Contains(forkReq, []byte(`THREE`)) {
		t.Fatalf("the last request is not the fork's: %.300s", forkReq)
	}
	at := bytes.Index(oldReq, []byte(`\nthree"`))
	upTo := bytes.LastIndex(oldReq[:at], []byte(`{"role":"user"`))
	if at < 0 || upTo < 0 {
		t.Fatalf("the old request holds no message three:\n%s", oldReq)
	}
	if n := commonPrefix(oldReq, forkReq); n < upTo {
		t.Errorf("the fork's first request shares %d bytes with the old one's, want all %d before the message replaced:\nold:  %.400s\nfork: %.400s", n, upTo, oldReq[n:], forkReq[n:])
	}

	// A fork of the fork, and a second fork at the same place.
	if b, err := Make(ctx, r, "t:fork5", Fork{Before: 3, Text: "TWO"}, nil); err != nil || b.Thread != "t:fork5:fork3" || b.Seq != 4 {
		t.Errorf("a fork of the fork: %+v, %v", b, err)
	}
	if b, err := Make(ctx, r, "t", Fork{Before: 5, Text: "three again"}, nil); err != nil || b.Thread != "t:fork5.2" {
		t.Errorf("a second fork: %+v, %v", b, err)
	}
	if got := r.Metrics.Ops(metrics.OpFork); got != 3 {
		t.Errorf("forks counted %d, want 3", got)
	}

	for _, c := range []struct {
		before int64
		why    string
	}{
		{4, "is of type answer, not an owner message"},
		{7, `is a message from "Bob", not from the owner`},
		{0, "is not a seq of"},
		{99, "is not a seq of"},
	} {
		_, err := Make(ctx, r, "t", Fork{Before: c.before, Text: "x", Thread: "refused"}, nil)
		if !errors.Is(err, turn.ErrBadFork) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("before %d: %v, want %v saying %q", c.before, err, turn.ErrBadFork, c.why)
		}
	}
	if dir, _ := r.Agent.Path(home.Chat, "refused"); dir != "" {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused fork left %s", dir)
		}
	}
	if _, err := Make(ctx, r, "t", Fork{Before: 5, Text: "x", Thread: "t:fork5"}, nil); !errors.Is(err, turn.ErrBadFork) {
		t.Errorf("a fork onto a taken thread: %v, want %v", err, turn.ErrBadFork)
	}
}
