// Package home names every path of an agent's home. Nothing else in Link
// Harness builds a path from a name: a name from outside (a thread, a model,
// a skill) becomes a path only through Agent.Path, which refuses what could
// leave the home.
//
// An agent's home (FORMATS.md, "An agent's home"):
//
//	config.json                    settings, read each turn
//	harness.json                   the harness that serves it (lnk agent use)
//	tool-lists.json                derived: each tool's name, address hash, calls
//	instructions/persona.md        who it is
//	instructions/owner.md          who you are
//	instructions/instruction.md    standing instructions
//	instructions/models/<maker>/<model>/instruction.md
//	memory/notes.md                notes
//	skills/<name>/SKILL.md         skills
//	files/                         the workspace its tools work in
//	chats/<dir>/                   one conversation (events.jsonl, events.zst,
//	                               store.<driver>, chat.md, tools.json, end, pending/,
//	                               and the harness's derived ids.index and told)
//	chats/events.sqlite            lnk-sqlite's file (and events.sqlite-wal, -shm)
//	chats/events.pebble/           lnk-pebble's folder
//
// A thread's folder, <dir>, is never another thread's (ThreadDir): a
// plain name, every byte of it one of [a-z0-9._-], is its own folder's
// (web-1); any other name's folder is the name with each byte outside
// [A-Za-z0-9._-] made '-', then '~' and a hash of the whole name
// (telegram:42 is telegram-42~<16 characters of base32>). A conversation
// made before this rule, in a folder of the readable part alone
// (FormerThreadDir), keeps it: package chatdir finds which folder holds a
// thread.
//
// No thread's folder bears a name a store or the harness keeps for itself
// (store.Reserved), so no path Path makes of a thread is one of theirs.
//
// Its errors, ErrBadName and ErrTooLarge, are also store.ErrBadName and
// store.ErrTooLarge: a name or a size refused here and one refused by a
// store are one kind of error to a caller. Those kinds live in package
// store, the bottom of the tree, so home imports store (the seam alone,
// and the event codec under it) and nothing else of Link Harness's.
package home
