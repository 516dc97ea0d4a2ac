// Package store is the seam between a turn and the place a conversation is
// kept, and the event: its type, its codec, and the errors every store
// returns.
//
// A conversation is an append-only sequence of events numbered 1, 2, 3 …
// with no gaps. Each event is one JSON object (DESIGN.md's schema) kept as
// the bytes it was written with: stores move bytes, and only the turn
// decodes what it needs. A store writes an event only if its seq is free and
// the next one; the same bytes written again at a seq already holding them
// is success, so a write retried after its answer was lost is harmless.
//
// What only some stores can do is a separate interface found by type
// assertion; a store that cannot do a thing returns ErrUnsupported.
//
// This package imports nothing of Link Harness's own.
package store
