// Package fork makes a new conversation from an old one: its events before
// an owner message, byte for byte with their times and its tools'
// narrowing, then a new message in that message's place, answered like
// any. A fork copies events, not the visible messages, so the new
// conversation's prompt is the old one's up to the replaced message and
// the provider's cache of it holds. The new conversation is written as a
// turn writes one (turn.Runner.WriteNew), and its first turn taken there.
package fork
