package prompt

import (
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
)

// A summary opening the window is one message with the one after it, in
// the user's role, so the roles still alternate and the window starts with
// the user.
func TestSummaryInWindow(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 45, 0, 0, time.UTC)
	events := []event.Event{
		{Seq: 21, Time: at, Type: event.TypeSummary, Through: 10, Text: "Ada asked for her notes; two were found."},
		{Seq: 11, Time: at, Type: event.TypeMessage, Head: "[head]", Text: "and the third?"},
		{Seq: 12, Time: at, Type: event.TypeAnswer, Text: "None."},
	}
	msgs := Messages(events)
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[1].Role != "assistant" {
		t.Fatalf("messages: %+v", msgs)
	}
	want := SummaryHead + "\nAda asked for her notes; two were found.\n\n[head]\nand the third?"
	if msgs[0].Text != want {
		t.Errorf("the first message:\n%s\nwant:\n%s", msgs[0].Text, want)
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		text string
		most int
		want string
	}{
		{"short", 20, "short"},
		{"  many\n\nlines  here ", 40, "many lines here"},
		{"the quick brown fox jumps over", 16, "the quick brown…"},
		{"abcdefghijklmnopqrstuvwxyz", 10, "abcdefghij…"},
		{"日本語のテキスト", 7, "日本…"},
	} {
		if got := Quote(tc.text, tc.most); got != tc.want {
			t.Errorf("Quote(%q, %d) = %q, want %q", tc.text, tc.most, got, tc.want)
		}
	}
}

// The ask quotes where what stays begins, and says it in one line.
func TestSummaryAsk(t *testing.T) {
	ask := SummaryAsk("What is on\ntoday? "+strings.Repeat("and more ", 40), false)
	if !strings.Contains(ask, "\u201cWhat is on today? and more") || strings.Contains(ask, "\n") || strings.Contains(ask, "%s") || strings.Contains(ask, NotesTool) {
		t.Errorf("ask: %s", ask)
	}
	notes := SummaryAsk("What is on today?", true)
	if !strings.Contains(notes, NotesTool) || !strings.HasSuffix(notes, SummaryAsk("What is on today?", false)[len(SummaryAsk("What is on today?", false))-200:]) {
		t.Errorf("ask with notes: %s", notes)
	}
}
