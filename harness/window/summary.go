package window

// Summaries. Once the conversation fills compact_at of its share, what
// would leave at the window's next drop point is summarized after the
// turn's answer, and the window then starts with the summary, followed by
// the events after the last one it covers (its through). These functions
// say when a turn summarizes, what the summary covers, and which summary
// opens a window; the turn does the asking and the writing.

// Due says whether a turn whose window, after its answer, is items (oldest
// first, the summary that opens it first) asks for a summary: once the
// window fills at (compact_at) of share. at of 0 is "never". A summary
// that failed writes nothing, so the window stays full and every turn
// after would be due; they back off instead: the turns that ended since the
// window filled with something that could leave (a message after the
// window's first) are counted from the log, this one among them, and a turn
// asks when that count is 1, 2, 4, 8 … So the turn after one failure (or a
// crash before the summary was written) asks again, a model that always
// fails is asked ever more rarely, and the count needs no state but the
// conversation's: a new process backs off as the old one would have.
func Due(items []Item, share int, at float64) bool {
	if at <= 0 || share <= 0 {
		return false
	}
	fill := int(at * float64(share))
	tokens, ended := 0, 0
	first := 0 // the window's first event of the conversation's own
	if len(items) > 0 && items[0].Through != 0 {
		first = 1
	}
	leaves := false // a message after the first: something could leave
	for i, it := range items {
		tokens += it.Tokens
		leaves = leaves || i > first && it.CanStart
		if it.Ends && tokens >= fill && leaves {
			ended++
		}
	}
	if tokens < fill || ended == 0 {
		return false
	}
	return ended&(ended-1) == 0
}

// Cut is what a summary of a window covers: the index in items of the
// first item that stays (a message), where the window moves on at its next
// drop point as it would without a summary: at least half the share, then
// up to the next message. ok is false when nothing could leave (one turn
// alone fills the window). Everything before items[stay] is summarized,
// the summary that opens the window among it; the new summary's through is
// items[stay].Seq-1.
func Cut(items []Item, share int) (stay int, ok bool) {
	if len(items) == 0 {
		return 0, false
	}
	return dropPoint(items, 0, share)
}

// Opening is the index in items of the summary that opens a window
// starting at seq start: the latest summary that covers everything up to
// start. items are the events read from start on, oldest first, summaries
// where the log holds them (after the answer they followed). -1 when none
// does: the window was never summarized, or it moved past its summary (the
// summary after it failed, or compact_at is "never"), and starts bare.
func Opening(start int64, items []Item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Through != 0 && items[i].Through == start-1 {
			return i
		}
	}
	return -1
}
