package heldwindow

import (
	"fmt"
	"testing"

	"lnk.dev/linkharness/store/event"
)

func ev(seq int64) event.Event {
	return event.Event{Seq: seq, Type: event.TypeMessage, Text: fmt.Sprintf("message %d", seq)}
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

// Give leaves nothing of the turn's events in the slice it gives back,
// whether the turn's window started later in it and was appended to, or
// the turn wrote where it did not say (it made room in a slice of its
// own, or failed).
func TestGiveEmpties(t *testing.T) {
	for _, whole := range []bool{false, true} {
		var h Held
		h.Keep(nil)
		h.p.events = make([]event.Event, 0, 100)
		events := h.Events()
		for seq := range int64(20) {
			events = append(events, ev(seq+1))
		}
		h.Keep(events)
		win := append(events[5:], ev(21), ev(22))
		if whole {
			_ = append(win, ev(23)) // written, and not said
			h.Whole = true
		} else {
			h.Keep(win)
		}
		all := events[:cap(events)]
		h.Give()
		for i := range all {
			if all[i].Seq != 0 || all[i].Text != "" {
				t.Fatalf("whole=%v: the slice given back holds event %d at %d", whole, all[i].Seq, i)
			}
		}
	}
}

// A slice lent is read in place: kept or not, grown past the slice held
// or not, whole or not, Give leaves it as it was; Own copies it into the
// slice held.
func TestLentNeverGiven(t *testing.T) {
	for _, whole := range []bool{false, true} {
		lent := make([]event.Event, 0, 300)
		for seq := range int64(200) {
			lent = append(lent, ev(seq+1))
		}
		var h Held
		h.Keep(nil)
		h.Lend(lent)
		window := lent[50:]
		h.Keep(window)
		if !h.IsLent(window) || h.IsLent(h.Events()) {
			t.Fatalf("IsLent: the window lent %v, the slice held %v", h.IsLent(window), h.IsLent(h.Events()))
		}
		mine := h.Own(window[:10])
		if h.IsLent(mine) || mine[0].Seq != 51 || &mine[0] == &window[0] {
			t.Fatal("Own did not copy the events into a slice of the turn's own")
		}
		h.Whole = whole
		h.Give()
		for i := range lent {
			if lent[i].Seq != int64(i+1) {
				t.Fatalf("whole=%v: the slice lent was written at %d: seq %d", whole, i, lent[i].Seq)
			}
		}
		if mine[0].Seq != 0 {
			t.Errorf("whole=%v: the copy Own made was not emptied", whole)
		}
	}
}

// Giving a window back costs what the turn filled, not what the slice it
// was given grew to for another conversation's longer window.
func BenchmarkGive(b *testing.B) {
	for _, grown := range []int{64, 8192} {
		b.Run(fmt.Sprintf("grown=%d", grown), func(b *testing.B) {
			var h Held
			h.Keep(nil)
			h.p.events = make([]event.Event, 0, grown)
			h.Give()
			e := event.Event{Seq: 1, Type: event.TypeMessage, Text: "hello"}
			b.ReportAllocs()
			for b.Loop() {
				h.Keep(nil)
				events := h.Events()
				for range 52 {
					events = append(events, e)
				}
				h.Keep(events)
				h.Give()
			}
		})
	}
}
