package rows

import (
	"context"
	"fmt"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/lease"
	"lnk.dev/linkharness/store/internal/rules"
)

// Step is what a driver reads and writes of one conversation inside one
// step: a transaction, or the time it holds the conversation's lock, so
// that nothing another writes comes between a read and the write after
// it. Its errors are the store's own; the functions below wrap them.
type Step interface {
	// Lease reads the lease's record; none is the zero lease.Record.
	Lease(ctx context.Context) (lease.Record, error)
	// PutLease writes next in place of cur, the record Lease read.
	PutLease(ctx context.Context, cur, next lease.Record) error

	// Last returns the highest seq written, or 0.
	Last(ctx context.Context) (int64, error)
	// Insert writes event as seq, the one after Last's. It reports false,
	// having written nothing, when another wrote seq since Last was read.
	Insert(ctx context.Context, seq int64, event []byte) (bool, error)
	// Holds says whether seq, which is written, holds event's bytes.
	Holds(ctx context.Context, seq int64, event []byte) (bool, error)

	// Meta returns the side datum name as it is kept, and whether there
	// is one.
	Meta(ctx context.Context, name string) (data []byte, found bool, err error)
	// PutMeta writes the side datum name, found saying whether Meta found
	// one.
	PutMeta(ctx context.Context, name string, data []byte, found bool) error
}

// Append writes event as seq in s once token passes thread's lease
// (lease.Check): the seq after the last is written; one further on is
// store.ErrGap; a seq written is success when it holds the same bytes,
// else store.ErrSeqTaken.
func Append(ctx context.Context, s Step, thread string, seq int64, event []byte, token int64) error {
	cur, err := s.Lease(ctx)
	if err != nil {
		return err
	}
	if err := lease.Check(thread, cur, token); err != nil {
		return err
	}
	last, err := s.Last(ctx)
	if err != nil {
		return err
	}
	switch {
	case seq > last+1:
		return fmt.Errorf("%w: seq %d, the last is %d", store.ErrGap, seq, last)
	case seq == last+1:
		wrote, err := s.Insert(ctx, seq, event)
		if err != nil || wrote {
			return err
		}
		// Another wrote seq since the last was read: compare.
	}
	same, err := s.Holds(ctx, seq, event)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("%w: seq %d holds other bytes", store.ErrSeqTaken, seq)
	}
	return nil
}

// Take takes or renews thread's lease for holder in s, as w decides
// (lease.Watch.Take), and returns its token and whose lease ran out for
// it (lease.RanOut).
func Take(ctx context.Context, s Step, w *lease.Watch, thread, holder string, ttl time.Duration) (int64, string, error) {
	cur, err := s.Lease(ctx)
	if err != nil {
		return 0, "", err
	}
	next, err := w.Take(thread, cur, holder, ttl, time.Now())
	if err != nil {
		return 0, "", err
	}
	if err := s.PutLease(ctx, cur, next); err != nil {
		return 0, "", err
	}
	return next.Token, lease.RanOut(cur, holder), nil
}

// Release lets thread's lease of token go in s (lease.Release).
func Release(ctx context.Context, s Step, thread string, token int64) error {
	cur, err := s.Lease(ctx)
	if err != nil {
		return err
	}
	next, err := lease.Release(thread, cur, token)
	if err != nil {
		return err
	}
	return s.PutLease(ctx, cur, next)
}

// Get returns the side datum name, never nil, or store.ErrNotFound.
func Get(ctx context.Context, s Step, name string) ([]byte, error) {
	if err := rules.Name(name); err != nil {
		return nil, err
	}
	data, found, err := s.Meta(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("side datum %q: %w", name, err)
	}
	if !found {
		return nil, fmt.Errorf("side datum %q: %w", name, store.ErrNotFound)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Narrow narrows the conversation's tool list to tools in s
// (rules.Narrow) and returns the list it keeps now.
func Narrow(ctx context.Context, s Step, tools []string) ([]string, error) {
	had, found, err := s.Meta(ctx, store.ToolsMeta)
	if err != nil {
		return nil, err
	}
	kept, b, err := rules.Narrow(had, tools)
	if err != nil {
		return nil, err
	}
	return kept, s.PutMeta(ctx, store.ToolsMeta, b, found)
}
