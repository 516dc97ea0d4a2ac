// Package convert writes an agent's conversations from one way of keeping
// them to another (log, compact, a driver), for lnk agent chat convert.
//
// Each conversation is written the new way in a folder beside its own
// (<dir>~convert), what else its folder holds (tools.json, pending/, end)
// hard-linked along, then put in its place with one rename, an exchange:
// before it the old way is whole in place, after it the new way. The old
// way is forgotten last.
//
// A driver keys a conversation by its folder's name, so a conversation
// converted to a driver has its events written there under that name while
// its folder still keeps it the old way: nothing reads them until the
// exchange puts in place the folder holding only the driver's marker and
// what is not an event. One converted out of a driver is forgotten by it
// once the exchange is done. A conversion that stopped short, at any step,
// is settled by the next run: the folder in place is whole, and a driver's
// copy nothing reads is forgotten.
//
// It belongs to the harness, not the stores: it works on an agent's chats
// folder as the harness lays it out (chat.md, tools.json, pending/, the
// drivers' markers), reaching the stores through their seam and the file
// names they keep, and the stores know nothing of an agent.
//
// The agent must be stopped while its conversations are converted: the
// program holds the agent's home to make sure (lnk-link-harness serve
// holds it shared, lnk agent chat convert exclusive).
package convert
