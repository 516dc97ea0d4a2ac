package gcs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/storage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/lease"
	"lnk.dev/linkharness/store/internal/rules"
)

// The lease object's metadata keys; part of the format.
const (
	metaHolder = "holder"
	metaToken  = "token"
	metaTTL    = "ttl_ms"
	metaLast   = "last" // the highest seq its writer had seen: a start for Last
)

// readLease reads the lease object's metadata; no object is the zero
// Record and generation 0. The Record's Gen is the object's generation.
func (c *Conversation) readLease(ctx context.Context) (lease.Record, int64, error) {
	a, err := c.d.bucket.Object(c.lease).Attrs(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return lease.Record{}, 0, nil
	}
	if err != nil {
		return lease.Record{}, 0, err
	}
	r := lease.Record{Holder: a.Metadata[metaHolder], Gen: a.Generation}
	token, err1 := strconv.ParseInt(a.Metadata[metaToken], 10, 64)
	ttl, err2 := strconv.ParseInt(a.Metadata[metaTTL], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return r, 0, fmt.Errorf("%w: the lease object %q: %v", store.ErrCorrupt, c.lease, err)
	}
	r.Token, r.TTL = token, time.Duration(ttl)*time.Millisecond
	if last, err := strconv.ParseInt(a.Metadata[metaLast], 10, 64); err == nil && last > 0 {
		c.sawSeq(last)
	}
	return r, a.Generation, nil
}

// replaceLease writes next only if the lease object is still generation
// gen (0: still absent); a lost race is a precondition failure.
func (c *Conversation) replaceLease(ctx context.Context, gen int64, next lease.Record) error {
	conds := storage.Conditions{GenerationMatch: gen}
	if gen == 0 {
		conds = storage.Conditions{DoesNotExist: true}
	}
	_, err := c.put(ctx, c.lease, &conds, nil, map[string]string{
		metaHolder: next.Holder,
		metaToken:  strconv.FormatInt(next.Token, 10),
		metaTTL:    strconv.FormatInt(next.TTL.Milliseconds(), 10),
		metaLast:   strconv.FormatInt(c.seen.Load(), 10),
	})
	return err
}

// swap reads the lease, asks change for the next record, and replaces the
// lease with it only if it is still the one read, reading again after a
// lost race.
func (c *Conversation) swap(ctx context.Context, change func(cur lease.Record) (lease.Record, error)) (lease.Record, error) {
	for try := 1; ; try++ {
		cur, gen, err := c.readLease(ctx)
		if err != nil {
			return cur, err
		}
		next, err := change(cur)
		if err != nil {
			return cur, err
		}
		err = c.replaceLease(ctx, gen, next)
		if !isPrecondition(err) || try == maxTries {
			return next, err
		}
		if err := pause(ctx, try); err != nil {
			return cur, err
		}
	}
}

// pause waits a little longer after each lost race, until ctx is done.
func pause(ctx context.Context, try int) error {
	t := time.NewTimer(time.Duration(min(try, 10)) * 5 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Lease takes or renews the lease, replacing its object only if it is
// still the generation read.
func (c *Conversation) Lease(ctx context.Context, holder string, ttl time.Duration) (int64, error) {
	token, _, err := c.LeaseFrom(ctx, holder, ttl)
	return token, err
}

// LeaseFrom is Lease, also saying whose lease ran out for it.
func (c *Conversation) LeaseFrom(ctx context.Context, holder string, ttl time.Duration) (int64, string, error) {
	var ranOut string // of the last try, the one swapped in
	next, err := c.swap(ctx, func(cur lease.Record) (lease.Record, error) {
		ranOut = lease.RanOut(cur, holder)
		return c.d.watch.Take(c.thread, cur, holder, ttl, time.Now())
	})
	if err != nil {
		return 0, "", c.errorf("lease: %w", err)
	}
	return next.Token, ranOut, nil
}

// Release lets the lease of token go, keeping its token in the object.
func (c *Conversation) Release(ctx context.Context, token int64) error {
	_, err := c.swap(ctx, func(cur lease.Record) (lease.Record, error) {
		return lease.Release(c.thread, cur, token)
	})
	if err != nil {
		return c.errorf("release: %w", err)
	}
	return nil
}

// MetaGet returns the side datum name, or store.ErrNotFound.
func (c *Conversation) MetaGet(ctx context.Context, name string) ([]byte, error) {
	if err := rules.Name(name); err != nil {
		return nil, c.errorf("%w", err)
	}
	b, _, err := c.get(ctx, c.meta+name, store.MaxMetaBytes)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil, c.errorf("side datum %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, c.errorf("side datum %q: %w", name, err)
	}
	return b, nil
}

// MetaPut sets the side datum name.
func (c *Conversation) MetaPut(ctx context.Context, name string, data []byte) error {
	if err := rules.Datum(name, data); err != nil {
		return c.errorf("%w", err)
	}
	if _, err := c.put(ctx, c.meta+name, nil, data, nil); err != nil {
		return c.errorf("put side datum %q: %w", name, err)
	}
	return nil
}

// MetaDelete removes the side datum name.
func (c *Conversation) MetaDelete(ctx context.Context, name string) error {
	if err := rules.Name(name); err != nil {
		return c.errorf("%w", err)
	}
	err := c.d.bucket.Object(c.meta + name).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return c.errorf("delete side datum %q: %w", name, err)
	}
	return nil
}

// NarrowTools narrows the tool list, replacing its object only if it is
// still the generation read.
func (c *Conversation) NarrowTools(ctx context.Context, tools []string) ([]string, error) {
	name := c.meta + store.ToolsMeta
	for try := 1; ; try++ {
		had, gen, err := c.get(ctx, name, store.MaxMetaBytes)
		if errors.Is(err, storage.ErrObjectNotExist) {
			had, err = nil, nil
		}
		if err != nil {
			return nil, c.errorf("narrow tools: %w", err)
		}
		kept, b, err := rules.Narrow(had, tools)
		if err != nil {
			return nil, c.errorf("narrow tools: %w", err)
		}
		conds := storage.Conditions{GenerationMatch: gen}
		if gen == 0 {
			conds = storage.Conditions{DoesNotExist: true}
		}
		_, err = c.put(ctx, name, &conds, b, nil)
		if err == nil {
			return kept, nil
		}
		if !isPrecondition(err) || try == maxTries {
			return nil, c.errorf("narrow tools: %w", err)
		}
		if err := pause(ctx, try); err != nil {
			return nil, c.errorf("narrow tools: %w", err)
		}
	}
}
