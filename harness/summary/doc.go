// Package summary decides when a conversation is summarized, what the
// model is asked for it, and whether its answer is a summary to keep.
//
// Compaction after the answer. Once the conversation fills [window]
// compact_at of its share (Due), the turn answers first, with the window it
// last sent (the room compact_at leaves holds what came since), and its
// answer goes to its caller. Then, still holding the conversation, the
// model is asked for the summary as a continuation of that same request
// (Ask.Request): the same system, tools and messages, the answer, and one
// more user message (prompt.SummaryAsk) quoting the start of the first
// message that stays. The provider's cache holds for all of it:
// Anthropic's breakpoints stay where the answer's request had them,
// OpenAI's and OpenRouter's prompt_cache_key is the same. The summary is
// one event, written once, never in the chat or its copy for people; the
// next turns' window starts with it. One that fails, is refused or is cut
// short (Why) writes nothing, and a later turn asks again (window.Due
// backs off).
//
// Where the agent saves notes ([window] save_notes, its tools offering
// prompt.NotesTool, and the owner among those who spoke), the model may
// call prompt.NotesTool first, for at most MaxNoteRounds rounds; any other
// call is answered NotesOnly, unrun. What every call used and cost is
// counted together (Spent).
//
// Every function here is pure: the turn asks the model, runs the calls and
// writes the event.
package summary
