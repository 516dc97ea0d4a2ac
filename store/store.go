package store

import (
	"context"
	"errors"
	"time"
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
	// ErrStaleLease comes from an append carrying a lease token that is no
	// longer the conversation's lease (another holder took it, or it was
	// let go), or carrying none while another holds the lease; and from a
	// holder whose own clock says its lease may have run out.
	ErrStaleLease = errors.New("store: stale lease")
	// ErrLeaseHeld comes from Lease while another holder has the lease and
	// it has not run out.
	ErrLeaseHeld = errors.New("store: lease held")
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

// Driver keeps every conversation of one agent, each under its thread key:
// the name of the conversation's folder under chats/ (the whole thread name
// is kept in the conversation's first event). A Driver is safe for
// concurrent use, and so are the Conversations it opens. Listing threads is
// the ability Lister.
type Driver interface {
	// Open returns thread's conversation. Opening reads and writes
	// nothing: a thread with no events is an empty conversation.
	Open(thread string) (Conversation, error)

	// Close lets go of what the driver holds; its conversations are then
	// unusable.
	Close() error
}

// Lister is a Driver that lists its conversations.
type Lister interface {
	// Threads returns the thread keys of the conversations with at least
	// one event, in byte order.
	Threads(ctx context.Context) ([]string, error)
}

// Leaser is a conversation that keeps a lease saying which turn runs, with
// fencing: each holder that takes the lease gets a token greater than any
// before it, and the store refuses an append carrying a token that is not
// the current one. Its methods may be called while another of the
// conversation's methods runs (a holder renews while its turn appends).
//
// A lease runs out by the clocks of those who watch it, never by a time
// written in the store: Lease by another holder succeeds only once the
// lease has stayed unrenewed for its time to live on the asking process's
// monotonic clock, and the holder counts its own time to live from when it
// last asked (see HoldLease).
type Leaser interface {
	// Lease takes the lease for holder with time to live ttl, or renews it
	// when holder has it, and returns its token. It fails with ErrLeaseHeld
	// while another holder's lease has not run out.
	Lease(ctx context.Context, holder string, ttl time.Duration) (token int64, err error)

	// Release lets the lease of token go, so the next holder need not
	// wait for it to run out. A token that is not the lease's current one
	// changes nothing and is ErrStaleLease.
	Release(ctx context.Context, token int64) error

	// AppendLeased is Append carrying token: it fails with ErrStaleLease
	// unless token is the lease's current one, checked in the same step as
	// the write. Token 0 says the writer holds no lease, which is refused
	// while another holds it.
	AppendLeased(ctx context.Context, seq int64, event []byte, token int64) error
}

// Meta is a conversation that keeps side data beside its events: small
// named values that are not events (the tools it was narrowed to, an answer
// still to hand over). Names are 1 to 100 bytes of [A-Za-z0-9._-]; a value
// is at most MaxMetaBytes.
type Meta interface {
	// MetaGet returns the value of name, or ErrNotFound.
	MetaGet(ctx context.Context, name string) ([]byte, error)
	// MetaPut sets name to data, durably.
	MetaPut(ctx context.Context, name string, data []byte) error
	// MetaDelete removes name; removing a name not there is success.
	MetaDelete(ctx context.Context, name string) error
}

// Narrower is a conversation that narrows the tools it may call in one step.
type Narrower interface {
	// NarrowTools keeps only the tools both in the conversation's list and
	// in tools, and returns what is kept; the first narrowing keeps tools.
	// A list only ever narrows. It is kept as the side datum ToolsMeta, a
	// JSON array of names.
	NarrowTools(ctx context.Context, tools []string) ([]string, error)
}

// Forgetter is a conversation that can be forgotten: lnk agent chat
// convert forgets a driver's copy of a conversation once the conversation
// is kept another way.
type Forgetter interface {
	// Forget removes the conversation's events and side data, durably, in
	// one step; afterwards it is an empty conversation. Its lease, if it
	// has one, is kept, so tokens still only grow should it come back.
	// Forgetting a conversation with nothing in it is success.
	Forget(ctx context.Context) error
}

// ToolsMeta is the side datum NarrowTools keeps its list in.
const ToolsMeta = "tools"

// MaxMetaBytes is the largest side datum a store keeps.
const MaxMetaBytes = 1 << 20
