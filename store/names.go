package store

import "strings"

// Names kept for the stores and the harness. An agent's chats folder holds
// every conversation's folder, named by its thread, beside the files a
// driver keeps every conversation in (chats/events.sqlite and its -wal and
// -shm, chats/events.pebble/) and the folders a conversion writes into
// (chats/<dir>~convert/); a conversation's folder holds its store's files
// (events.jsonl, events.zst, their .torn copies, a store.<driver> marker)
// beside the harness's own (chat.md, tools.json, end, pending/). A thread's
// folder named as one of these would be taken for it, or take its place,
// so harness/home refuses a thread whose folder name is Reserved.
//
// A store names every file it makes where conversations' folders live
// events.<something>, and every file in a conversation's folder too
// (storetest's conformance suite checks it), so a new store needs no new
// rule here.

// The reserved prefixes and suffixes, and the names reserved whole: part
// of the format of an agent's home.
var (
	reservedPrefixes = [...]string{
		"events.", // every store's files: events.jsonl, events.sqlite-wal, events.pebble …
		"store.",  // a driver's marker, store.<driver>
	}
	reservedSuffixes = [...]string{
		".torn",    // bytes cut from a store's file, kept beside it
		"~convert", // a conversion's folder, beside the conversation's
	}
	reservedWhole = [...]string{"chat.md", "tools.json", "end", "pending"}
)

// Reserved says whether name is one a store or the harness keeps for
// itself under an agent's chats folder, which no thread's folder may be:
// one starting "events." or "store.", ending ".torn" or "~convert", or one
// of chat.md, tools.json, end and pending. Case is not told apart, since a
// folder on a case-insensitive disk (macOS's, by default) named
// Events.SQLite is events.sqlite.
func Reserved(name string) bool {
	for _, p := range reservedPrefixes {
		if len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) {
			return true
		}
	}
	for _, s := range reservedSuffixes {
		if len(name) >= len(s) && strings.EqualFold(name[len(name)-len(s):], s) {
			return true
		}
	}
	for _, w := range reservedWhole {
		if strings.EqualFold(name, w) {
			return true
		}
	}
	return false
}
