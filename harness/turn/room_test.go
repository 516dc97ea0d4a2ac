package turn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/event"
)

// A turn of every round calling a tool whose answer is 32 KiB, in a
// window of 24,000 tokens, which two rounds' answers fill: between rounds
// the turn summarizes what leaves first, so no request the model is sent
// outgrows the window (the scripted model's log says so, counted as the
// harness counts, a token for four bytes, less the answer's room), and the
// turn still answers. Its message left the window with the summary; the
// copy for people still holds it.
func TestToolHeavyTurnStaysInWindow(t *testing.T) {
	r, m := webRunner(t, `
[[rule]]
match = "filled your window"
text = "Summary: Ada asked for the large pages read; each was, and the digging goes on."

[[rule]]
match = "Write a summary of what leaves"
text = "Summary: Ada asked to dig; the pages were read."

[[rule]]
match = "dig"
text = "digging"
[[rule.call]]
name = "web__big"
`)
	const size = 24000
	s := settings.Defaults()
	s.Window.Max, s.Window.MaxSet = size, true
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	a, err := r.Message(context.Background(), "t", Message{Text: "dig through the big pages"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := readEvents(t, r, "t")
	if n := len(ofType(ev, event.TypeResult)); n != MaxRounds {
		t.Errorf("%d results, want %d", n, MaxRounds)
	}
	sums := ofType(ev, event.TypeSummary)
	answers := ofType(ev, event.TypeAnswer)
	if len(sums) < 2 || a.Seq != answers[len(answers)-1].Seq || len(answers[len(answers)-1].Calls) != 0 {
		t.Fatalf("%d summaries; answered %+v", len(sums), a)
	}
	for _, s := range sums {
		if first := ev[s.Through]; first.Type != event.TypeAnswer || len(first.Calls) == 0 || s.Window.Start != first.Seq {
			t.Errorf("summary %d opens the window at %+v", s.Seq, first)
		}
	}
	room := size - int(0.125*size) // the answer's room: [window] answer's share
	reqs := m.Requests()
	if len(reqs) < MaxRounds+1+len(sums) {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, b := range reqs {
		if tokens := len(b) / 4; tokens > room {
			t.Errorf("request %d: %d tokens, over the window less the answer's room, %d", i+1, tokens, room)
		}
	}
	// The answer's request opens with the latest summary before it, and
	// holds none of what that covers.
	var last string
	for _, b := range reqs {
		if !strings.Contains(string(b), "filled your window") && !strings.Contains(string(b), "Write a summary of what leaves") {
			last = string(b)
		}
	}
	var before event.Event
	for _, s := range sums {
		if s.Seq < a.Seq {
			before = s
		}
	}
	if !strings.Contains(last, jsonString(before.Text)) || strings.Contains(last, "dig through the big pages") {
		t.Errorf("the answer's request does not open with the latest summary alone:\n%.2000s", last)
	}
	// The next turn reads the window back as the turn left it: opened by
	// the latest summary, within the room.
	if _, err := r.Message(context.Background(), "t", Message{Text: "and now?"}, nil); err != nil {
		t.Fatal(err)
	}
	ev = readEvents(t, r, "t")
	reqs = m.Requests()
	next := ""
	for _, b := range reqs {
		if !strings.Contains(string(b), "filled your window") && !strings.Contains(string(b), "Write a summary of what leaves") {
			next = string(b)
		}
	}
	var latest event.Event
	for _, e := range ev {
		if e.Type == event.TypeMessage && e.Text == "and now?" {
			break
		}
		if e.Type == event.TypeSummary {
			latest = e
		}
	}
	if !strings.Contains(next, jsonString(prompt.SummaryHead+"\n"+latest.Text)) || len(next)/4 > room || !strings.Contains(next, "and now?") {
		t.Errorf("the next turn's request (%d bytes) does not open with the latest summary, %d:\n%.3000s", len(next), latest.Seq, next)
	}
	dir, _ := r.Agent.Path(home.Chat, "t")
	copy, err := os.ReadFile(filepath.Join(dir, "chat.md"))
	if err != nil || !strings.Contains(string(copy), "dig through the big pages") || !strings.Contains(string(copy), a.Text) || strings.Contains(string(copy), "Summary:") {
		t.Errorf("the copy for people: %v\n%s", err, copy)
	}
}
