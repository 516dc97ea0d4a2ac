// Package store is the seam between a turn and the place a conversation is
// kept: Conversation and the abilities beside it, leases, limits, and the
// errors every store returns. An event's type and codec are package
// store/event.
//
// A conversation is an append-only sequence of events numbered 1, 2, 3 …
// with no gaps. Each event is one JSON object (package event's format) kept
// as the bytes it was written with: stores move bytes, and only the turn
// decodes what it needs. A store writes an event only if its seq is free and
// the next one; the same bytes written again at a seq already holding them
// is success, so a write retried after its answer was lost is harmless.
//
// What only some stores can do is a separate interface found by type
// assertion; a store that cannot do a thing returns ErrUnsupported.
//
// # Errors
//
// Every error a store returns wraps one of the sentinels below with %w and
// says where it happened; callers match them with errors.Is. Three kinds are
// shared by all of Link Harness and mapped to one answer each: a name
// refused (ErrBadName), something over its limit (ErrTooLarge), and a
// conflict (ErrSeqTaken, ErrLeaseHeld, ErrStaleLease). They live here, at
// the bottom of the tree, so that packages above wrap them rather than
// invent their own kinds: harness/home's ErrBadName and ErrTooLarge are
// store's too. ErrBadEvent is event.ErrInvalid, defined by the codec below
// this package, so the codec's errors and a store's refusal of an event are
// the one error.
//
// This package imports nothing of Link Harness's own but store/event.
package store
