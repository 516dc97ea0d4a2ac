package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// CallTimeout is the longest a call may take before it is stopped.
const CallTimeout = 30 * time.Second

// MaxLine is the longest request or answer, in bytes: an append's event, or
// a read page of up to maxPageBytes and one more event, with room for the
// rest.
const MaxLine = 3*event.MaxBytes + 64<<10

// maxPageBytes is how many bytes of events one read answer holds at most
// (always at least one event).
const maxPageBytes = event.MaxBytes

// ErrTimeout comes from a call that took longer than its time limit.
var ErrTimeout = errors.New("driver: call past its time limit")

// Error codes; part of the protocol.
const (
	codeSeqTaken   = -32001
	codeGap        = -32002
	codeNotFound   = -32003
	codeBadEvent   = -32004
	codeCorrupt    = -32005
	codeStaleLease = -32006
	codeLeaseHeld  = -32007
	codeTimeout    = -32008
	codeBadName    = -32009
	codeTooLarge   = -32010
	codeOther      = -32000
	codeParse      = -32700
	codeBadRequest = -32600
	codeNoMethod   = -32601
	codeBadParams  = -32602
)

var sentinels = []struct {
	code int
	err  error
}{
	{codeSeqTaken, store.ErrSeqTaken},
	{codeGap, store.ErrGap},
	{codeNotFound, store.ErrNotFound},
	{codeBadEvent, store.ErrBadEvent},
	{codeCorrupt, store.ErrCorrupt},
	{codeStaleLease, store.ErrStaleLease},
	{codeLeaseHeld, store.ErrLeaseHeld},
	{codeTimeout, ErrTimeout},
	{codeBadName, store.ErrBadName},
	{codeTooLarge, store.ErrTooLarge},
	{codeNoMethod, store.ErrUnsupported},
}

// codeOf returns the code an error is answered with.
func codeOf(err error) int {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return codeTimeout
	}
	var p *paramsError
	if errors.As(err, &p) {
		return codeBadParams
	}
	var r *rpcError
	if errors.As(err, &r) {
		return r.code
	}
	return codeOther
}

// CallError is a driver's answer that a call failed. It wraps the store
// sentinel its code carries, if any.
type CallError struct {
	Driver  string // lnk-<name>, or the bridge's address
	Method  string
	Code    int
	Message string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("driver %s: %s: %s (code %d)", e.Driver, e.Method, e.Message, e.Code)
}

func (e *CallError) Unwrap() error {
	for _, s := range sentinels {
		if s.code == e.Code {
			return s.err
		}
	}
	return nil
}

// paramsError says a call's params are wrong.
type paramsError struct{ msg string }

func (e *paramsError) Error() string { return e.msg }

// params is every method's params; each method reads its own.
type params struct {
	Thread  string          `json:"thread,omitempty"`
	Seq     int64           `json:"seq,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
	Lease   int64           `json:"lease,omitempty"`
	From    int64           `json:"from,omitempty"`
	Limit   int             `json:"limit,omitempty"`
	Reverse bool            `json:"reverse,omitempty"`
	Holder  string          `json:"holder,omitempty"`
	TTLMS   int64           `json:"ttl_ms,omitempty"`
	Token   int64           `json:"token,omitempty"`
	Name    string          `json:"name,omitempty"`
	Data    []byte          `json:"data,omitempty"`
	Tools   []string        `json:"tools,omitempty"`
}

// Results.
type (
	readResult struct {
		Events []json.RawMessage `json:"events"`
		More   bool              `json:"more"`
	}
	lastResult struct {
		Last int64 `json:"last"`
	}
	threadsResult struct {
		Threads []string `json:"threads"`
	}
	leaseResult struct {
		Token    int64  `json:"token"`
		TookOver string `json:"took_over,omitempty"` // the holder whose lease ran out for this one
	}
	metaResult struct {
		Data []byte `json:"data"`
	}
	toolsResult struct {
		Tools []string `json:"tools"`
	}
)

// appendParams appends append's params, the event written as it is: a
// JSON encoder would rewrite its bytes (escaping <, > and &).
func appendParams(dst []byte, thread string, seq int64, ev []byte, lease int64) []byte {
	dst = append(dst, `{"thread":`...)
	dst = event.AppendString(dst, thread)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"lease":`...)
	dst = strconv.AppendInt(dst, lease, 10)
	dst = append(dst, `,"event":`...)
	dst = append(dst, ev...)
	return append(dst, '}')
}

// appendRequest appends one request line.
func appendRequest(dst []byte, id int64, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":`...)
	dst = event.AppendString(dst, method)
	dst = append(dst, `,"params":`...)
	dst = append(dst, params...)
	return append(dst, '}', '\n')
}

// appendAnswer appends one answer line: result, or err.
func appendAnswer(dst []byte, id json.RawMessage, result []byte, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	if err != nil {
		dst = append(dst, `,"error":{"code":`...)
		dst = strconv.AppendInt(dst, int64(codeOf(err)), 10)
		dst = append(dst, `,"message":`...)
		dst = event.AppendString(dst, err.Error())
		return append(dst, '}', '}', '\n')
	}
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}', '\n')
}

// answer is an answer line as read.
type answer struct {
	ID     int64           `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}
