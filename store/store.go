package store

import (
	"context"
	"errors"
	"time"

	"lnk.dev/linkharness/store/event"
)

// Errors every store returns, wrapped with %w and where it happened. Callers
// match them with errors.Is. The first three are the errors of names, limits
// and conflicts that other packages of Link Harness wrap too (harness/home's
// ErrBadName and ErrTooLarge match ErrBadName and ErrTooLarge here), so a
// caller maps each to one answer, whoever refused.
var (
	// ErrBadName comes when a name given from outside is refused: a thread
	// key by Driver.Open (empty, over 200 bytes, a control byte), a side
	// datum's name by the Meta methods (not 1 to 100 bytes of
	// [A-Za-z0-9._-]), an agent's name by a driver's constructor; and, from
	// harness/home, a thread, model or file name that cannot become a path.
	ErrBadName = errors.New("store: bad name")
	// ErrTooLarge comes when something is over its limit: an event over
	// event.MaxBytes handed to Append (the error is ErrBadEvent too),
	// a side datum over MaxMetaBytes handed to MetaPut; and, from
	// harness/home, a file over its section's most.
	ErrTooLarge = errors.New("store: too large")
	// ErrSeqTaken comes from Append when the seq already holds a different
	// event: another writer got there first.
	ErrSeqTaken = errors.New("store: seq taken")

	// ErrGap comes from Append when the seq is past the next free one.
	ErrGap = errors.New("store: seq not next")
	// ErrNotFound comes when a conversation has no events yet, or does not
	// exist, and from MetaGet for a side datum not there.
	ErrNotFound = errors.New("store: no such conversation")
	// ErrCorrupt comes when stored bytes are damaged somewhere other than a
	// torn final record; the error says which file and offset.
	ErrCorrupt = errors.New("store: corrupt")
	// ErrBadEvent comes from Append when the event handed to it is not one
	// JSON object whose seq is the one given, or is over
	// event.MaxBytes (then with ErrTooLarge). It is event.ErrInvalid,
	// so the codec's own errors (event.SeqOf's, a Decoder's) match it too.
	ErrBadEvent = event.ErrInvalid
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

// Direction is the way Read goes: Forward (ascending seqs) or Backward
// (descending). It is a bool by another name (Backward is true), so a store
// may take it as one; callers write the names.
type Direction = bool

// The directions of Read.
const (
	Forward  Direction = false
	Backward Direction = true
)

// FromLast, as Read's from, starts at the conversation's last event: read
// Backward, it is the newest first.
const FromLast int64 = 0

// Conversation is one conversation's events in one store. A Conversation
// holds whatever it opened (a file, a connection) until Close; an idle agent
// holds none.
//
// Concurrency: a Conversation is safe for use by one goroutine at a time,
// unless its type says more (the stores reached through a connection, such
// as sqlite, postgres, pebble, gcs and a driver's, are safe for concurrent
// use: their Conversations hold nothing between calls). The fn given to
// Read must not call the same Conversation. Any number of Conversations on
// the same conversation, in this process or in others, may be used at once:
// the store serializes their appends, so two writers of one seq see one win
// and the other get ErrSeqTaken (or ErrGap), and a reader sees only whole
// events, each once. Which turn writes is decided by a lease (Leaser), not
// by the Conversation. Close may be called once, after every other call has
// returned. A Conversation comes from its store's constructor or a
// Driver's Open: the zero value of a store's type is not usable.
type Conversation interface {
	// Last returns the highest seq written, or 0 for a conversation with no
	// events.
	Last(ctx context.Context) (int64, error)

	// Append writes event, one JSON object whose seq is seq, durably before
	// it returns. It fails with ErrGap unless seq is Last()+1, and with
	// ErrSeqTaken if seq is taken by other bytes; the same bytes at the same
	// seq again is success.
	Append(ctx context.Context, seq int64, event []byte) error

	// Read calls fn for each event in order, from seq from: Forward, in
	// ascending seqs to the last; Backward, in descending seqs down to 1.
	// From FromLast (or any from <= 0) it starts at the last event. The
	// event bytes are valid only during the call. Read stops when fn
	// returns false, and reads only as much as it needs to get that far.
	Read(ctx context.Context, from int64, dir Direction, fn func(seq int64, event []byte) bool) error

	// Close lets go of what the conversation opened.
	Close() error
}

// Deferred is a conversation that can write an event without making it
// durable at once, and make it durable with the next event that is: one
// sync for both. The turn writes its message so before it asks the model,
// and the answer's sync makes the two durable; a store without it makes
// every Append durable, as Conversation says.
//
// An event appended deferred is written: it is read by every reader, is
// the conversation's last, takes its seq, and survives its process's
// death (the kernel holds it), but a machine that crashes before the
// next Append or Commit returns may lose it, and with it every deferred
// event after the last durable one; never an event an Append or Commit
// acknowledged. A deferred event is not acknowledged: its caller tells
// nobody of it until an Append or a Commit after it returns nil. If that
// Append fails, the deferred events before it may be gone too, and are
// written again by the caller's retry (a message id makes the retry one
// message). Its calls follow the Conversation's rule.
type Deferred interface {
	// AppendDeferred is Append, but the event is durable only once a
	// later Append or Commit on the same Conversation returns nil.
	AppendDeferred(ctx context.Context, seq int64, event []byte) error

	// Commit makes every event appended deferred durable; with none, it
	// does nothing but let go of what a Hold took.
	Commit(ctx context.Context) error
}

// Holder is a Deferred store whose writers' lock may be taken before its
// first append (store/log): Hold takes it and returns the last seq read
// under it, so the appends after it find the end without a look at the
// store; the lock is kept until the Append or Commit that makes them
// durable, or a Commit with none appended, or Close.
type Holder interface {
	Deferred
	Hold(ctx context.Context) (int64, error)
}

// Driver keeps every conversation of one agent, each under its thread key:
// the name of the conversation's folder under chats/ (the whole thread name
// is kept in the conversation's first event). Listing threads is the
// ability Lister.
//
// Concurrency: a Driver is safe for concurrent use by any number of
// goroutines, and so are the Conversations it opens; other processes may
// use the same agent's conversations through their own Driver at once, as
// a Conversation says. Close may be called once, after every other call on
// it and its Conversations has returned.
type Driver interface {
	// Open returns thread's conversation. Opening reads and writes
	// nothing: a thread with no events is an empty conversation.
	Open(thread string) (Conversation, error)

	// Close lets go of what the driver holds; its conversations are then
	// unusable.
	Close() error
}

// Lister is a Driver that lists its conversations. Threads is safe to call
// beside any other call of the Driver's; a conversation that gets its first
// event meanwhile may or may not be listed.
type Lister interface {
	// Threads returns the thread keys of the conversations with at least
	// one event, in byte order.
	Threads(ctx context.Context) ([]string, error)
}

// Leaser is a conversation that keeps a lease saying which turn runs, with
// fencing: each holder that takes the lease gets a token greater than any
// before it, and the store refuses an append carrying a token that is not
// the current one.
//
// Concurrency: its methods may be called from another goroutine while
// another of the conversation's methods runs (a holder renews while its
// turn appends), even on a Conversation that is otherwise for one
// goroutine at a time. Across processes the lease is what makes one turn
// run at a time; AppendLeased's check and write are one step, so a holder
// that lost the lease never writes after the next one has.
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
// still to hand over). Names are 1 to 100 bytes of [A-Za-z0-9._-] (else
// ErrBadName); a value is at most MaxMetaBytes (else ErrTooLarge).
//
// Concurrency: as the Conversation's own methods. Writers of one name in
// several processes at once leave one of the values, whole.
type Meta interface {
	// MetaGet returns the value of name, or ErrNotFound.
	MetaGet(ctx context.Context, name string) ([]byte, error)
	// MetaPut sets name to data, durably.
	MetaPut(ctx context.Context, name string, data []byte) error
	// MetaDelete removes name; removing a name not there is success.
	MetaDelete(ctx context.Context, name string) error
}

// Narrower is a conversation that narrows the tools it may call in one step:
// two narrowings at once, in one process or several, keep only what both
// allow. Its calls follow the Conversation's rule.
type Narrower interface {
	// NarrowTools keeps only the tools both in the conversation's list and
	// in tools, and returns what is kept; the first narrowing keeps tools.
	// An entry is a whole tool (memory) or one call (memory__search), and a
	// whole tool holds each of its calls: memory then memory__search keeps
	// memory__search. A list only ever narrows. It is kept as the side
	// datum ToolsMeta, a JSON array of names.
	NarrowTools(ctx context.Context, tools []string) ([]string, error)
}

// Forgetter is a conversation that can be forgotten: lnk agent chat
// convert forgets a driver's copy of a conversation once the conversation
// is kept another way. Forget is for a conversation no turn is using (a
// stopped agent's); an Append racing it may land before or after.
type Forgetter interface {
	// Forget removes the conversation's events and side data, durably, in
	// one step; afterwards it is an empty conversation. Its lease, if it
	// has one, is kept, so tokens still only grow should it come back.
	// Forgetting a conversation with nothing in it is success.
	Forget(ctx context.Context) error
}

// ToolsMeta is the side datum NarrowTools keeps its list in.
const ToolsMeta = "tools"

// MaxMetaBytes is the largest side datum a store keeps; MetaPut refuses a
// larger one with ErrTooLarge.
const MaxMetaBytes = 1 << 20
