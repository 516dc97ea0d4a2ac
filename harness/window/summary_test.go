package window

import (
	"slices"
	"testing"

	"lnk.dev/linkharness/store/event"
)

// turns makes a window of whole turns, a message and an answer that ends
// it, of the tokens given in pairs, seqs from first on.
func turns(first int64, tokens ...int) []Item {
	var its []Item
	for i, n := range tokens {
		its = append(its, Item{Seq: first + int64(i), Tokens: n, CanStart: i%2 == 0, Ends: i%2 == 1})
	}
	return its
}

func TestDue(t *testing.T) {
	summary := Item{Seq: 99, Tokens: 10, Through: 4}
	for _, tc := range []struct {
		name  string
		items []Item
		share int
		at    float64
		want  bool
	}{
		{"empty", nil, 100, 0.75, false},
		{"below", turns(1, 10, 10, 10, 10), 100, 0.75, false},
		{"fills it exactly", turns(1, 25, 25, 15, 10), 100, 0.75, true},
		{"past it", turns(1, 30, 30, 30, 5), 100, 0.75, true},
		{"filled before, only this turn counts", turns(1, 80, 10, 5, 5), 100, 0.75, true},
		{"never", turns(1, 30, 30, 30, 5), 100, 0, false},
		{"no share", turns(1, 30, 30), 0, 0.75, false},
		{"a turn not ended yet", turns(1, 30, 30, 30), 100, 0.75, false},
		{"a summary counts", append([]Item{summary}, turns(5, 30, 30, 4, 1)...), 100, 0.75, true},
		{"without it, below", turns(5, 30, 30, 4, 1), 100, 0.75, false},
		// Back-off: the turns that ended past the fill with something that
		// could leave, this one among them.
		{"1st turn past it", turns(1, 40, 40, 1, 1), 100, 0.75, true},
		{"2nd: tries again", turns(1, 40, 40, 1, 1, 1, 1), 100, 0.75, true},
		{"3rd: backs off", turns(1, 40, 40, 1, 1, 1, 1, 1, 1), 100, 0.75, false},
		{"4th: tries", turns(1, 40, 40, 1, 1, 1, 1, 1, 1, 1, 1), 100, 0.75, true},
		{"5th: backs off", turns(1, 40, 40, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), 100, 0.75, false},
		{"one turn alone, nothing could leave: not counted", turns(1, 40, 40), 100, 0.75, false},
		{"after a summary, its turn alone: not counted", append([]Item{summary}, turns(5, 70, 10)...), 100, 0.75, false},
		{"after a summary, the next turn: the 1st", append([]Item{summary}, turns(5, 70, 10, 1, 1)...), 100, 0.75, true},
		{"turns before the fill do not count", turns(1, 10, 10, 10, 10, 10, 10, 20, 10), 100, 0.75, true},
	} {
		if got := Due(tc.items, tc.share, tc.at); got != tc.want {
			t.Errorf("%s: Due = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Over a long run of turns that fail to summarize, the turns that ask are
// the 1st, 2nd, 4th, 8th … past the fill: a model that always fails is
// asked ever more rarely.
func TestDueBacksOff(t *testing.T) {
	its := turns(1, 40, 40, 1, 1)
	var asked []int
	for n := 1; n <= 40; n++ {
		if Due(its, 1000, 0.075) {
			asked = append(asked, n)
		}
		its = append(its, turns(int64(len(its)+1), 1, 1)...)
	}
	want := []int{1, 2, 4, 8, 16, 32}
	if len(asked) != len(want) {
		t.Fatalf("asked at turns %v, want %v", asked, want)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Fatalf("asked at turns %v, want %v", asked, want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []Item
		share int
		stay  int
		ok    bool
	}{
		{"half the share, to a message", turns(1, 20, 20, 20, 20, 20, 5), 100, 4, true},
		{"a message past half", turns(1, 30, 30, 10, 10), 100, 2, true},
		{"the opening summary leaves with the rest", append([]Item{{Seq: 30, Tokens: 40, Through: 9}}, turns(10, 10, 10, 20, 5)...), 100, 3, true},
		{"past the last message: the last message", turns(1, 10, 10, 10, 10), 1000, 2, true},
		{"one turn alone", turns(1, 80, 10), 100, 0, false},
		{"the summary and one turn alone", append([]Item{{Seq: 30, Tokens: 10, Through: 9}}, turns(10, 80, 10)...), 100, 0, false},
		{"nothing", nil, 100, 0, false},
	} {
		stay, ok := Cut(tc.items, tc.share)
		if stay != tc.stay || ok != tc.ok {
			t.Errorf("%s: Cut = %d, %v; want %d, %v", tc.name, stay, ok, tc.stay, tc.ok)
		}
	}
}

func TestOpening(t *testing.T) {
	old := Item{Seq: 21, Through: 10}
	newer := Item{Seq: 41, Through: 30}
	for _, tc := range []struct {
		name  string
		start int64
		items []Item
		want  int
	}{
		{"none", 1, turns(1, 1, 1), -1},
		{"the summary after the window's events", 11, append(turns(11, 1, 1), old, Item{Seq: 22, CanStart: true}), 2},
		{"the latest of two covering the start", 11, []Item{{Seq: 11, CanStart: true}, old, {Seq: 25, Through: 10}}, 2},
		{"a summary of what came before it", 31, []Item{{Seq: 31, CanStart: true}, newer}, 1},
		{"moved past it: bare", 12, []Item{{Seq: 12}, old}, -1},
	} {
		if got := Opening(tc.start, tc.items); got != tc.want {
			t.Errorf("%s: Opening = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A window opened by a summary: the summary is one item, its tokens count
// in the window, and when the window drops past it (a summary after it
// failed), it is not counted as conversation before the start.
func TestStartWithSummary(t *testing.T) {
	its := append([]Item{{Seq: 21, Tokens: 50, Through: 10}}, turns(11, 30, 30, 30, 5)...)
	prev := Checkpoint{Start: 11, TokensBefore: 400}
	if got := Start(prev, its, 200); got != prev {
		t.Errorf("fits: Start = %+v, want %+v", got, prev)
	}
	want := Checkpoint{Start: 13, TokensBefore: 460}
	if got := Start(prev, its, 100); got != want {
		t.Errorf("dropped past the summary: Start = %+v, want %+v", got, want)
	}
}

// Rearranges says whether Opened writes: each window is given to Opened
// too, and what it says is checked against what Opened did.
func TestRearranges(t *testing.T) {
	old := Item{Seq: 21, Through: 10}
	for _, tc := range []struct {
		name  string
		start int64
		items []Item
		want  bool
	}{
		{"no summary", 1, turns(1, 1, 1), false},
		{"opened by its summary, first", 11, []Item{{Seq: 21, Through: 10}, {Seq: 22, CanStart: true}}, false},
		{"its summary after the window's events", 11, append(turns(11, 1, 1), old, Item{Seq: 22, CanStart: true}), true},
		{"a summary first that covers less", 12, []Item{old, {Seq: 22, CanStart: true}}, true},
		{"moved past a summary", 12, []Item{{Seq: 12}, old}, true},
		{"empty", 1, nil, false},
	} {
		if got := Rearranges(tc.start, tc.items); got != tc.want {
			t.Errorf("%s: Rearranges = %v, want %v", tc.name, got, tc.want)
		}
		events := make([]event.Event, len(tc.items))
		for i, it := range tc.items {
			events[i] = event.Event{Seq: it.Seq, Type: event.TypeMessage}
			if it.Through != 0 {
				events[i].Type, events[i].Through = event.TypeSummary, it.Through
			}
		}
		before := slices.Clone(events)
		got, _ := Opened(tc.start, events, slices.Clone(tc.items))
		wrote := !slices.EqualFunc(before, events, func(a, b event.Event) bool { return a.Seq == b.Seq && a.Type == b.Type }) || len(got) != len(before)
		if wrote != tc.want {
			t.Errorf("%s: Opened rearranged %v; Rearranges says %v", tc.name, wrote, tc.want)
		}
	}
}
