package store

import (
	"context"
	"errors"
)

// Errors every store returns, wrapped with %w and where it happened.
var (
	// ErrSeqTaken comes from Append when the seq already holds a different event.
	ErrSeqTaken = errors.New("store: seq taken")
	// ErrGap comes from Append when the seq is past the next free one.
	ErrGap = errors.New("store: seq not next")
	// ErrNotFound comes when a conversation has no events yet, or does not exist.
	ErrNotFound = errors.New("store: no such conversation")
	// ErrCorrupt comes when stored bytes are damaged somewhere other than a
	// torn final record; the error says which file and offset.
	ErrCorrupt = errors.New("store: corrupt")
	// ErrBadEvent comes when an event handed to Append is not one JSON object
	// whose seq is the one given.
	ErrBadEvent = errors.New("store: bad event")
	// ErrUnsupported comes from a store asked for something it cannot do.
	ErrUnsupported = errors.New("store: unsupported")
)

// Conversation is one conversation's events in one store. A Conversation
// holds whatever it opened (a file, a connection) until Close; an idle agent
// holds none. Unless an implementation says otherwise, a Conversation is safe
// for use by one goroutine at a time, and writers in other processes are
// serialized by the store itself.
type Conversation interface {
	// Last returns the highest seq written, or 0 for a conversation with no
	// events.
	Last(ctx context.Context) (int64, error)

	// Append writes event, one JSON object whose seq is seq, durably before
	// it returns. It fails with ErrGap unless seq is Last()+1, and with
	// ErrSeqTaken if seq is taken by other bytes; the same bytes at the same
	// seq again is success.
	Append(ctx context.Context, seq int64, event []byte) error

	// Read calls fn for each event in order: forward from seq from
	// (ascending), or, with reverse, from seq from down to 1 (descending),
	// where from <= 0 means the last event. The event bytes are valid only
	// during the call. Read stops when fn returns false, and reads only as
	// much as it needs to get that far.
	Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error

	// Close lets go of what the conversation opened.
	Close() error
}
