package event

import (
	"errors"
	"time"
)

// ErrInvalid comes from a Decoder, SeqOf, MessageID and UnquoteRaw when
// bytes are not an event: not one JSON object, a known key with a value of
// the wrong type, no seq or no type, or over MaxBytes. Package store's
// ErrInvalid is this same error.
var ErrInvalid = errors.New("event: invalid")

// Event types.
const (
	TypeMessage = "message"
	TypeAnswer  = "answer"
	TypeResult  = "result"
	TypeSummary = "summary"
)

// Where an answer's or a summary's cost comes from (Event.CostSource). An
// event with a cost and no source was written before sources were kept,
// when every cost was priced: it reads as CostPriced.
const (
	// CostReported is what the provider said it charged for the call
	// (OpenRouter's usage.cost).
	CostReported = "reported"

	// CostPriced is the usage priced at the model facts' prices, for a
	// provider that says no cost.
	CostPriced = "priced"
)

// MaxBytes is the largest event a store accepts. A tool's answer is cut
// to 32 KiB of text and a message body is limited by the server, so an event
// past this size is a bug or an attack, not a conversation.
const MaxBytes = 4 << 20

// Event is one event of a conversation, in the schema of API.md, "Events".
// The zero value is an empty event. Keys the schema does not name are kept
// in Extra, as they were read, and written back after the known keys.
type Event struct {
	Seq    int64
	Time   time.Time
	Type   string
	Thread string // on the first event only: the whole thread name

	// A message.
	ID         string
	From       Sender
	Owner      bool
	Connection string
	Head       string

	// A message's, an answer's, a result's or a summary's text.
	Text string

	// An answer.
	Thinking   []byte // raw JSON: thinking blocks with signatures, kept, never shown
	Calls      []Call
	Model      string
	Provider   string
	ResponseID string
	Usage      Usage
	LatencyMS  int64
	Cost       float64 // USD
	CostSource string  // CostReported, CostPriced, or empty: priced, or no cost known
	Window     *Window

	// A result.
	CallID    string
	Name      string
	Error     string
	Truncated bool

	// A summary.
	Through int64

	// Extra holds the keys the schema does not name, as `"key":value` pairs
	// separated by commas, exactly as read.
	Extra []byte
}

// Sender says who sent a message.
type Sender struct {
	ID   string
	Name string
}

// Call is one tool call of an answer. Args is the call's arguments as raw
// JSON (an object).
type Call struct {
	ID   string
	Name string
	Args []byte
}

// Usage is what the provider counted for one model call, in tokens.
type Usage struct {
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
}

// Window is an answer's checkpoint of where its window started: the first
// seq the model saw, that event's time, and the rough tokens before it.
type Window struct {
	Start        int64
	StartTime    time.Time
	TokensBefore int64
}

// Reset empties e for reuse, keeping the capacity of its slices.
func (e *Event) Reset() {
	// Zeroed in place and the buffers put back: a literal with them in it
	// would be built on the caller's stack, an event's size, first.
	calls, extra, thinking := e.Calls[:0], e.Extra[:0], e.Thinking[:0]
	*e = Event{}
	e.Calls, e.Extra, e.Thinking = calls, extra, thinking
}
