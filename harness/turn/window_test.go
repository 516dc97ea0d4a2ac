package turn

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/store/event"
)

// writeSummarized writes a conversation of n events as a long one holds
// them after summaries: messages and answers in turn, a summary 21 events
// before the end covering all but the 30 events before it, and every
// answer since recording the window it opens.
func writeSummarized(tb testing.TB, dir, thread string, n int) (summarySeq int64) {
	tb.Helper()
	s := int64(n - 20)
	if s%2 == 0 {
		s-- // after an answer
	}
	hometest.WriteLog(tb, dir, thread, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), n, func(e *event.Event) {
		seq := e.Seq
		message := seq%2 == 1
		if seq > s {
			message = (seq-s)%2 == 1
		}
		switch {
		case seq == s:
			e.Type, e.Text, e.Through = event.TypeSummary, "the summary: "+strings.Repeat("what was said ", 60), s-31
			e.Window = &event.Window{Start: s - 30, TokensBefore: 9000}
		case message:
			e.Type, e.ID, e.Text, e.Head = event.TypeMessage, fmt.Sprintf("m%d", seq), fmt.Sprintf("message %d: %s", seq, strings.Repeat("words ", 40)), "[head]"
		default:
			e.Type, e.Text = event.TypeAnswer, fmt.Sprintf("answer %d: %s", seq, strings.Repeat("reply ", 40))
			e.Window = &event.Window{Start: max(1, seq-40)}
			if seq > s {
				e.Window.Start, e.Window.TokensBefore = s-30, 9000
			}
		}
	})
	return s
}

// readSummarized opens a conversation of n events written by
// writeSummarized and returns a function reading its window, checked to
// open with the summary.
func readSummarized(tb testing.TB, n int) func() {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "ada")
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Open: openLog}
	chat, _ := r.Agent.Path(home.Chat, "long")
	s := writeSummarized(tb, chat, "long", n)
	tt := &turn{r: r, c: r.caches(), thread: "long", dir: chat}
	if err := tt.open(context.Background(), "log"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(tt.close)
	return func() {
		events, cp, err := tt.readWindow(context.Background(), 8000)
		if err != nil || len(events) != 52 || events[0].Seq != s || cp.Start != s-30 || events[1].Seq != s-30 {
			tb.Fatalf("the window of %d events: %v, %+v, %d events from %d", n, err, cp, len(events), events[0].Seq)
		}
		tt.giveWindow()
	}
}

// Reading the window after a summary reads back to the summary's through
// alone, whatever came before it: the same allocations for a conversation
// of 1,000 events as for one of 100,000, within a budget (about three a
// window's event, its strings decoded, and the slices of its counts).
func TestWindowAfterSummaryAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	const budget = 150
	var got []float64
	for _, n := range []int{1000, 100000} {
		read := readSummarized(t, n)
		read() // the pool's slice, grown once
		a := testing.AllocsPerRun(50, read)
		got = append(got, a)
		if a > budget {
			t.Errorf("reading the window after a summary, %d events: %.0f allocations, over %d", n, a, budget)
		}
	}
	if got[0] != got[1] {
		t.Errorf("allocations grow with the conversation: %v", got)
	}
	t.Logf("allocations, 1,000 and 100,000 events: %v", got)
}

func BenchmarkWindowAfterSummary(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			read := readSummarized(b, n)
			b.ReportAllocs()
			for b.Loop() {
				read()
			}
		})
	}
}

func TestFilledTo(t *testing.T) {
	slice := make([]event.Event, 3, 10)
	other := make([]event.Event, 3, 10)
	for _, c := range []struct {
		name   string
		events []event.Event
		want   int
	}{
		{"the slice itself", slice[:4], 4},
		{"a window starting later, appended to", slice[2:7], 7},
		{"all of it", slice[:10], 10},
		{"none of it yet", slice[:0], 0},
		{"another slice", other[:5], 0},
		{"nil", nil, 0},
		{"at its end, empty", slice[10:10], 0},
		{"cut short by a full slice expression", slice[0:4:5], 0},
	} {
		if got := filledTo(slice, c.events); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// giveWindow leaves nothing of the turn's events in the slice it gives
// back, whether the turn's window started later in it and was appended
// to, or the turn wrote where it did not say (it made room in a slice of
// its own, or failed).
func TestGiveWindowEmpties(t *testing.T) {
	ev := func(seq int64) event.Event {
		return event.Event{Seq: seq, Type: event.TypeMessage, Text: fmt.Sprintf("message %d", seq)}
	}
	for _, whole := range []bool{false, true} {
		tt := &turn{}
		tt.keepWindow(nil)
		tt.win.slice.events = make([]event.Event, 0, 100)
		events := tt.win.slice.events[:0]
		for seq := range int64(20) {
			events = append(events, ev(seq+1))
		}
		tt.keepWindow(events)
		win := append(events[5:], ev(21), ev(22))
		if whole {
			_ = append(win, ev(23)) // written, and not said
			tt.win.whole = true
		} else {
			tt.keepWindow(win)
		}
		all := events[:cap(events)]
		tt.giveWindow()
		for i := range all {
			if all[i].Seq != 0 || all[i].Text != "" {
				t.Fatalf("whole=%v: the slice given back holds event %d at %d", whole, all[i].Seq, i)
			}
		}
	}
}

// Giving a window back costs what the turn filled, not what the slice it
// was given grew to for another conversation's longer window.
func BenchmarkGiveWindow(b *testing.B) {
	for _, grown := range []int{64, 8192} {
		b.Run(fmt.Sprintf("grown=%d", grown), func(b *testing.B) {
			tt := &turn{}
			tt.keepWindow(nil)
			tt.win.slice.events = make([]event.Event, 0, grown)
			tt.giveWindow()
			e := event.Event{Seq: 1, Type: event.TypeMessage, Text: "hello"}
			b.ReportAllocs()
			for b.Loop() {
				tt.keepWindow(nil)
				events := tt.win.slice.events[:0]
				for range 52 {
					events = append(events, e)
				}
				tt.keepWindow(events)
				tt.giveWindow()
			}
		})
	}
}
