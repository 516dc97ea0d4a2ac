package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/rules"
)

var (
	_ store.Driver       = (*Driver)(nil)
	_ store.Lister       = (*Driver)(nil)
	_ store.Conversation = (*Conversation)(nil)
	_ store.Leaser       = (*Conversation)(nil)
	_ store.LeaseTaker   = (*Conversation)(nil)
	_ store.Meta         = (*Conversation)(nil)
	_ store.Narrower     = (*Conversation)(nil)
	_ store.Forgetter    = (*Conversation)(nil)
)

// Transport carries calls to a driver: a plugin program (Process) or the
// store bridge (HTTP). Its methods are safe for concurrent use.
type Transport interface {
	// Call sends method with params, a JSON object, and returns the
	// result, a JSON object, or the driver's error as a *CallError. It
	// gives up when ctx is done.
	Call(ctx context.Context, method string, params []byte) ([]byte, error)
	// Close lets go of what the transport holds.
	Close() error
}

// Driver is a store driver reached through a Transport: the harness's side
// of the protocol. It is safe for concurrent use, and so are its
// Conversations. Every ability is there; a driver without one answers
// store.ErrUnsupported.
type Driver struct {
	t Transport

	// Limit is the longest a call may take; zero means CallTimeout. Set it
	// before the first call.
	Limit time.Duration
}

// New returns the driver t reaches.
func New(t Transport) *Driver { return &Driver{t: t} }

// call makes one call under the time limit.
func (d *Driver) call(ctx context.Context, method string, params []byte, result any) error {
	limit := d.Limit
	if limit <= 0 {
		limit = CallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	b, err := d.t.Call(cctx, method, params)
	if err != nil {
		if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("driver: %s: %w: no answer in %v: %v", method, ErrTimeout, limit, err)
		}
		return err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(b, result); err != nil {
		return fmt.Errorf("driver: %s: an answer that is not its result: %v", method, err)
	}
	return nil
}

// Open returns thread's conversation; it calls nothing.
func (d *Driver) Open(thread string) (store.Conversation, error) {
	if err := rules.Thread(thread); err != nil {
		return nil, fmt.Errorf("driver: %w", err)
	}
	return &Conversation{d: d, thread: thread}, nil
}

// Threads calls threads.
func (d *Driver) Threads(ctx context.Context) ([]string, error) {
	var r threadsResult
	if err := d.call(ctx, "threads", []byte("{}"), &r); err != nil {
		return nil, err
	}
	return r.Threads, nil
}

// Close closes the transport.
func (d *Driver) Close() error { return d.t.Close() }

// Conversation is one thread's conversation in a driver. It holds nothing
// between calls and is safe for concurrent use.
type Conversation struct {
	d      *Driver
	thread string
}

func (c *Conversation) params(p params) []byte {
	p.Thread = c.thread
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // params of strings, numbers and bytes always encode
	}
	return b
}

// Last calls last.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	var r lastResult
	err := c.d.call(ctx, "last", c.params(params{}), &r)
	return r.Last, err
}

// Append calls append without a lease.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.AppendLeased(ctx, seq, event, 0)
}

// AppendLeased calls append. The event is checked here too, so one that
// is not a JSON object never reaches the wire as part of the params.
func (c *Conversation) AppendLeased(ctx context.Context, seq int64, event []byte, token int64) error {
	if err := rules.Event(seq, event); err != nil {
		return fmt.Errorf("driver: append seq %d to %q: %w", seq, c.thread, err)
	}
	return c.d.call(ctx, "append", appendParams(nil, c.thread, seq, event, token), nil)
}

// Pages of a read grow from firstPage events to lastPage, so a tail read
// takes one call and a whole conversation few.
const (
	firstPage = 32
	lastPage  = 1024
)

// Read calls read page by page as fn takes the events.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, evt []byte) bool) error {
	limit := firstPage
	for {
		var r readResult
		if err := c.d.call(ctx, "read", c.params(params{From: from, Limit: limit, Reverse: reverse}), &r); err != nil {
			return err
		}
		var seq int64
		for _, ev := range r.Events {
			var err error
			if seq, err = event.SeqOf(ev); err != nil {
				return fmt.Errorf("driver: read %q: %w", c.thread, err)
			}
			if !fn(seq, ev) {
				return nil
			}
		}
		if !r.More || len(r.Events) == 0 {
			return nil
		}
		if reverse {
			from = seq - 1
			if from < 1 {
				return nil
			}
		} else {
			from = seq + 1
		}
		limit = min(2*limit, lastPage)
	}
}

// Close does nothing: a Conversation holds nothing.
func (c *Conversation) Close() error { return nil }

// KeepsNoCopy says a conversation a driver keeps has no copy for people
// (chat.md) beside it: its folder keeps only its marker and what is not an
// event, and the copy is made from the events when one is asked for.
func (c *Conversation) KeepsNoCopy() bool { return true }

// Lease calls lease.
func (c *Conversation) Lease(ctx context.Context, holder string, ttl time.Duration) (int64, error) {
	token, _, err := c.LeaseFrom(ctx, holder, ttl)
	return token, err
}

// LeaseFrom calls lease, and says whose lease ran out for it when the
// driver says so (took_over).
func (c *Conversation) LeaseFrom(ctx context.Context, holder string, ttl time.Duration) (int64, string, error) {
	var r leaseResult
	err := c.d.call(ctx, "lease", c.params(params{Holder: holder, TTLMS: ttl.Milliseconds()}), &r)
	return r.Token, r.TookOver, err
}

// Release calls release.
func (c *Conversation) Release(ctx context.Context, token int64) error {
	return c.d.call(ctx, "release", c.params(params{Token: token}), nil)
}

// MetaGet calls meta_get.
func (c *Conversation) MetaGet(ctx context.Context, name string) ([]byte, error) {
	var r metaResult
	if err := c.d.call(ctx, "meta_get", c.params(params{Name: name}), &r); err != nil {
		return nil, err
	}
	if r.Data == nil {
		r.Data = []byte{}
	}
	return r.Data, nil
}

// MetaPut calls meta_put.
func (c *Conversation) MetaPut(ctx context.Context, name string, data []byte) error {
	return c.d.call(ctx, "meta_put", c.params(params{Name: name, Data: data}), nil)
}

// MetaDelete calls meta_delete.
func (c *Conversation) MetaDelete(ctx context.Context, name string) error {
	return c.d.call(ctx, "meta_delete", c.params(params{Name: name}), nil)
}

// NarrowTools calls tools_narrow.
func (c *Conversation) NarrowTools(ctx context.Context, tools []string) ([]string, error) {
	var r toolsResult
	if tools == nil {
		tools = []string{}
	}
	err := c.d.call(ctx, "tools_narrow", c.params(params{Tools: tools}), &r)
	return r.Tools, err
}

// Forget calls forget.
func (c *Conversation) Forget(ctx context.Context) error {
	return c.d.call(ctx, "forget", c.params(params{}), nil)
}
