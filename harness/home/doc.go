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
// No thread's folder bears a name a store or the harness keeps for itself
// (store.Reserved), so no path Path makes of a thread is one of theirs.
//
// Its errors, ErrBadName and ErrTooLarge, are also store.ErrBadName and
// store.ErrTooLarge: a name or a size refused here and one refused by a
// store are one kind of error to a caller. Those kinds live in package
// store, the bottom of the tree, so home imports store (the seam alone,
// and the event codec under it) and nothing else of Link Harness's.
package home
