package window

import (
	"encoding/binary"
	"unicode/utf8"
)

// Tokens counts s roughly, as a turn does before the provider has counted:
// four ASCII bytes to a token, and one token for any other character, so
// Chinese or an emoji is not undercounted. The count never changes for a
// text once written, so the window's drop points stay where they are.
func Tokens(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		// Eight ASCII bytes at once: none has its high bit set.
		if i+8 <= len(s) && binary.LittleEndian.Uint64([]byte(s[i:i+8]))&0x8080808080808080 == 0 {
			ascii += 8
			i += 8
			continue
		}
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		other++
	}
	return (ascii+3)/4 + other
}

// Share is the conversation's share of a window of size tokens: the window
// less the answer's room, the fixed part of the prompt (instructions and
// tools) and the margin for the rough count's error. It is never negative.
func Share(size, answer, fixed int, margin float64) int {
	n := size - answer - fixed - int(margin*float64(size))
	if n < 0 {
		return 0
	}
	return n
}

// Checkpoint is where a window starts: the first seq the model sees, and
// the rough tokens of the conversation before it.
type Checkpoint struct {
	Start        int64
	TokensBefore int64
}

// Item is one event as the window sees it: its seq, its rough tokens,
// whether a window may start at it (a message starts a turn; an answer or a
// tool's result never opens a window), whether it ends a turn (an answer
// that calls nothing), and, for a summary, the last seq it covers.
type Item struct {
	Seq      int64
	Tokens   int
	CanStart bool
	Ends     bool
	Through  int64 // a summary's: the last seq it covers; 0 for any other event
}

// Start returns where the window starts, given the last checkpoint and the
// events from it to the end, oldest first (a summary that opens the window
// first of them, as Opening places it). While the events from the start do
// not fit share, the oldest turns leave half the share at a time, at the
// next message after that half: points fixed by the conversation itself, so
// the prompt's start stays the same for many turns between drops. The last
// message always stays, even if alone it does not fit. A summary that
// leaves is not the conversation's, so its tokens are not counted before
// the start.
func Start(prev Checkpoint, items []Item, share int) Checkpoint {
	total := 0
	for _, it := range items {
		total += it.Tokens
	}
	cp := prev
	i := 0
	for total > share && i < len(items) {
		j, ok := dropPoint(items, i, share)
		if !ok {
			break
		}
		for k := i; k < j; k++ {
			total -= items[k].Tokens
			if items[k].Through == 0 {
				cp.TokensBefore += int64(items[k].Tokens)
			}
		}
		i = j
		cp.Start = items[i].Seq
	}
	return cp
}

// dropPoint is the index of the item the window starts at when the oldest
// turns from items[i] leave: at least half the share, then up to the next
// message; past the last message, the last message. A summary opening the
// window never leaves alone: it goes with at least the turn after it. ok
// is false when no message after that could start the window.
func dropPoint(items []Item, i, share int) (j int, ok bool) {
	first := i // the first of the conversation's own events, which leaves
	if items[i].Through != 0 {
		first = i + 1
	}
	dropped := 0
	j = i
	for j < len(items) && (dropped < share/2 || dropped == 0 || j <= first || !items[j].CanStart) {
		dropped += items[j].Tokens
		j++
	}
	if j < len(items) {
		return j, true
	}
	// Half the share reaches past the last message: start at the last
	// message, if there is a later one.
	for k := len(items) - 1; k > first; k-- {
		if items[k].CanStart {
			return k, true
		}
	}
	return 0, false
}
