package window

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"你好", 2}, {"hi 👋", 2}, {"日本語のテキスト", 8},
		{"sixteen ascii ch", 4}, {"seventeen ascii c", 5}, {"1234567é", 3}, {"é12345678", 3},
		{strings.Repeat("ab", 100) + "你" + strings.Repeat("c", 7), 53}, {"\xff\xfe12345678", 4},
	} {
		if got := Tokens(tc.s); got != tc.want {
			t.Errorf("Tokens(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// tokensByRune is Tokens as it reads, a byte or a rune at a time.
func tokensByRune(s string) int {
	ascii, other := 0, 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii+3)/4 + other
}

// Tokens, which reads eight ASCII bytes at once, counts as a rune at a time.
func FuzzTokens(f *testing.F) {
	f.Add("plain text of some length, all of it ascii")
	f.Add("mixed 日本語 and ascii, and an emoji 👋 in between")
	f.Add("\xff\xfe\xfd bad bytes 12345678")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Tokens(s), tokensByRune(s); got != want {
			t.Fatalf("Tokens(%q) = %d, a rune at a time %d", s, got, want)
		}
	})
}

func BenchmarkTokens(b *testing.B) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		Tokens(s)
	}
}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		size, answer, fixed int
		margin              float64
		want                int
	}{
		{32768, 4096, 1000, 0.05, 32768 - 4096 - 1000 - 1638},
		{1000, 2000, 0, 0, 0},
	} {
		if got := Share(tc.size, tc.answer, tc.fixed, tc.margin); got != tc.want {
			t.Errorf("Share(%d,%d,%d,%v) = %d, want %d", tc.size, tc.answer, tc.fixed, tc.margin, got, tc.want)
		}
	}
}

func items(tokens ...int) []Item {
	// Odd seqs are messages, even ones answers.
	var its []Item
	for i, n := range tokens {
		its = append(its, Item{Seq: int64(i + 1), Tokens: n, CanStart: i%2 == 0})
	}
	return its
}

func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []Item
		share int
		want  Checkpoint
	}{
		{"fits", items(10, 10, 10, 10), 100, Checkpoint{Start: 1}},
		{"exactly", items(25, 25, 25, 25), 100, Checkpoint{Start: 1}},
		{"drops half, to a message", items(30, 30, 30, 30, 30), 100, Checkpoint{Start: 3, TokensBefore: 60}},
		{"drops until it fits", items(40, 40, 40, 40, 40, 40, 40), 100, Checkpoint{Start: 7, TokensBefore: 240}},
		{"last message alone too big", items(10, 10, 500), 100, Checkpoint{Start: 3, TokensBefore: 20}},
		{"no later message", items(500, 10), 100, Checkpoint{Start: 1}},
	} {
		if got := Start(Checkpoint{Start: 1}, tc.items, tc.share); got != tc.want {
			t.Errorf("%s: Start = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// The start stays put while the window grows within its share: the same
	// prompt start for many turns.
	its := items(30, 30, 30, 30, 30)
	cp := Start(Checkpoint{Start: 1}, its, 100)
	for n := 6; n <= 7; n++ {
		its = append(its, Item{Seq: int64(n), Tokens: 1, CanStart: n%2 == 1})
		next := Start(cp, its[cp.Start-1:], 100)
		if next != cp {
			t.Fatalf("start moved from %+v to %+v after a small event", cp, next)
		}
	}
}
