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
		tt.win.Give()
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
