package prompt

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The words of summaries. They are Link Harness's, not the spec's: they are
// the mechanism's, as a tool's description is, and what a summary keeps is
// the model's to choose. They are constants, so a summary asked today and
// one asked in a year continue their prompt's bytes alike.

// SummaryHead opens a summary where it stands in the window, in the user's
// role, before the messages after it: the model reads what it wrote as
// what it is, not as something its owner said.
const SummaryHead = "[Link Harness: the conversation before this point has left your window. This is the summary you wrote of it, which stands in its place:]"

// The ask for a summary after the answer, in three parts: %s in the head
// is the start of the first message that stays, quoted, so the model knows
// where what it summarizes ends without seqs it never sees; notesFirst
// comes between head and tail where the agent saves notes first.
const (
	summaryAskHead = "[Link Harness: this conversation has grown long, so its oldest part now leaves your window: everything before the message that begins \u201c%s\u201d. That message and those after it stay as they are. "
	notesFirst     = "First, if anything in what leaves matters beyond this conversation (what your owner told you of themselves, their people, their plans and preferences), save it to your notes with memory__remember, a call a note, and call nothing else; with nothing to save, call nothing. Then, with no call, write the summary. "
	summaryAskTail = "Write a summary of what leaves, to stand in its place from your next turn on; where it begins with an earlier summary, fold that in. Keep what you will need to go on: who asked what, what was decided and done, what the tools found, names, numbers, dates, and what is promised or still open. Leave out what the messages that stay already say. Write in the conversation's language, a few hundred words at most. Nobody else reads it; it is not shown in the chat. Write only the summary, and call no tool.]"
)

// NotesTool is the call a summary may make first, to save notes.
const NotesTool = "memory__remember"

// SummaryAsk is the user message that asks for a summary of what leaves the
// window before the message whose text begins first; with notes, it asks
// first to save what matters beyond the conversation with NotesTool.
func SummaryAsk(first string, notes bool) string {
	head := strings.Replace(summaryAskHead, "%s", Quote(first, 160), 1)
	if notes {
		return head + notesFirst + summaryAskTail
	}
	return head + summaryAskTail
}

// Quote is the start of text, at most most bytes, cut at a space where it
// can be and marked with an ellipsis when cut; white space runs become one
// space, so a quote is one line.
func Quote(text string, most int) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= most {
		return text
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if sp := strings.LastIndexFunc(text[:cut], unicode.IsSpace); sp > most/2 {
		cut = sp
	}
	return strings.TrimRightFunc(text[:cut], unicode.IsSpace) + "\u2026"
}

// The ask for a summary before an answer, when a turn's tool calls have
// filled the window: what leaves is all the request holds, and %s in the
// head names the call that stays, the first of what comes after it.
const (
	summaryAskFirstHead = "[Link Harness: this turn's tool calls have filled your window, so all of the above leaves it before you go on; your call of %s and what came after it stay. "
	summaryAskFirstTail = "Write a summary of what leaves, to stand in its place; where it begins with an earlier summary, fold that in. Keep what you need to finish this turn and to go on after it: what was asked in this turn, in its own words where they matter, what the tools found, names, numbers, dates, and what is promised or still open. Write in the conversation's language, a few hundred words at most. Nobody else reads it; it is not shown in the chat. Write only the summary, and call no tool.]"
)

// SummaryAskFirst is the user message that asks for a summary of all the
// request holds before a turn goes on from its call of tool; with notes,
// it asks first to save what matters beyond the conversation.
func SummaryAskFirst(tool string, notes bool) string {
	head := strings.Replace(summaryAskFirstHead, "%s", tool, 1)
	if notes {
		return head + notesFirst + summaryAskFirstTail
	}
	return head + summaryAskFirstTail
}
