package hometest

import (
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"

	"lnk.dev/linkharness/harness/home"
)

// Known returns names that met in one folder under the rule before, or
// would on a case-insensitive disk: each ThreadNames begins with them.
func Known() []string {
	return []string{
		"group:日本", "group:中国", "a-b", "a b", "!", "~", "telegram:42", "telegram-42",
		"Web1", "web1", "Web:1", "web:1", "WEB:1",
	}
}

// A run of runes a name's characters are drawn from.
type span struct{ lo, hi rune }

// The characters names are drawn from, by kind.
var (
	plainSpans = []span{{'a', 'z'}, {'0', '9'}, {'.', '.'}, {'_', '_'}, {'-', '-'}}
	upperSpans = []span{{'A', 'Z'}}
	// Printable ASCII outside [A-Za-z0-9._-], but the path separators.
	punct       = []rune(" !\"#$%&'()*+,:;<=>?@[]^`{|}~")
	scriptSpans = []span{
		{0xC0, 0xFF},       // Latin-1 letters
		{0x391, 0x3C9},     // Greek
		{0x410, 0x44F},     // Cyrillic
		{0x5D0, 0x5EA},     // Hebrew
		{0x621, 0x64A},     // Arabic
		{0x905, 0x939},     // Devanagari
		{0xE01, 0xE2E},     // Thai
		{0x3041, 0x3096},   // Hiragana
		{0x4E00, 0x9FFF},   // CJK
		{0xAC00, 0xD7A3},   // Hangul
		{0x1F600, 0x1F64F}, // emoji
		{0x301, 0x301},     // a combining acute accent
	}
)

// ThreadNames returns n thread names, all different, drawn by r: first
// Known, then, in turn, names of a few kinds of character (plain, upper
// case, punctuation, other scripts), names of MaxThreadBytes bytes, and
// names one drawn before with one letter's case turned or one character
// outside [A-Za-z0-9._-] changed for another (or for '-'). Every name is
// one home.ThreadDir takes.
func ThreadNames(r *rand.Rand, n int) []string {
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	add := func(s string) {
		if len(out) == n || seen[s] || len(s) > home.MaxThreadBytes || !utf8.ValidString(s) {
			return
		}
		if _, err := home.ThreadDir(s); err != nil {
			return
		}
		seen[s] = true
		out = append(out, s)
	}
	for _, s := range Known() {
		add(s)
	}
	for len(out) < n {
		switch k := r.IntN(10); {
		case k < 5:
			add(fresh(r, 1+r.IntN(24)))
		case k == 5:
			add(longest(r))
		case k < 8:
			add(caseTurned(r, out[r.IntN(len(out))]))
		default:
			add(otherOutside(r, out[r.IntN(len(out))]))
		}
	}
	return out
}

// fresh is a name of n characters, drawn from one to three kinds.
func fresh(r *rand.Rand, n int) string {
	kinds := make([]func() rune, 1+r.IntN(3))
	for i := range kinds {
		kinds[i] = kind(r)
	}
	var b strings.Builder
	for range n {
		b.WriteRune(kinds[r.IntN(len(kinds))]())
	}
	return b.String()
}

// kind returns a drawer of one kind of character.
func kind(r *rand.Rand) func() rune {
	switch r.IntN(4) {
	case 0:
		return func() rune { return from(r, plainSpans) }
	case 1:
		return func() rune { return from(r, upperSpans) }
	case 2:
		return func() rune { return punct[r.IntN(len(punct))] }
	}
	s := scriptSpans[r.IntN(len(scriptSpans))]
	return func() rune { return s.lo + rune(r.IntN(int(s.hi-s.lo+1))) }
}

// from draws a rune from one of spans.
func from(r *rand.Rand, spans []span) rune {
	s := spans[r.IntN(len(spans))]
	return s.lo + rune(r.IntN(int(s.hi-s.lo+1)))
}

// longest is a name of exactly MaxThreadBytes bytes.
func longest(r *rand.Rand) string {
	s := fresh(r, home.MaxThreadBytes)
	for len(s) > home.MaxThreadBytes {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s + strings.Repeat("x", home.MaxThreadBytes-len(s))
}

// caseTurned is s with the case of one of its ASCII letters turned, or s
// when it has none.
func caseTurned(r *rand.Rand, s string) string {
	var at []int
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return s
	}
	i := at[r.IntN(len(at))]
	b := []byte(s)
	b[i] ^= 0x20
	return string(b)
}

// otherOutside is s with one of its characters outside [A-Za-z0-9._-]
// changed for another such character, or for '-'; or, when it has none,
// with one such character put in.
func otherOutside(r *rand.Rand, s string) string {
	var at []int
	for i, c := range s {
		if c >= utf8.RuneSelf || !plain(byte(c)) {
			at = append(at, i)
		}
	}
	var with rune
	switch r.IntN(3) {
	case 0:
		with = '-'
	case 1:
		with = punct[r.IntN(len(punct))]
	default:
		with = from(r, scriptSpans)
	}
	if len(at) == 0 {
		i := r.IntN(len(s) + 1)
		return s[:i] + string(with) + s[i:]
	}
	i := at[r.IntN(len(at))]
	_, size := utf8.DecodeRuneInString(s[i:])
	return s[:i] + string(with) + s[i+size:]
}

func plain(c byte) bool {
	return unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) || c == '.' || c == '_' || c == '-'
}
