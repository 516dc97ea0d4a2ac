package gcs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"cloud.google.com/go/storage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// How many events a read asks for at once: a backward read a turn's tail
// in one round, a forward read a few at first, then more, up to most.
const (
	backwardBatch = 32
	forwardBatch  = 8
	mostBatch     = 32
)

// Read hands out the events from seq from, asking for a batch of them at
// once, each event an object. Forward from 0 or less is the last event
// alone; backward starts at the last event when from is past it.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error {
	step, width := int64(1), int64(forwardBatch)
	one := !reverse && from <= 0 // the last event alone
	if reverse || one {
		last, err := c.Last(ctx)
		if err != nil {
			return err
		}
		if from <= 0 || from > last {
			from = last
		}
		if one {
			width = 1
		}
	}
	if reverse {
		step, width = -1, backwardBatch
	}
	for seq := from; seq >= 1; {
		n := width
		if reverse {
			n = min(n, seq)
		}
		batch, err := c.fetch(ctx, seq, step, n)
		if err != nil {
			return c.errorf("read from %d: %w", from, err)
		}
		for i, event := range batch {
			s := seq + step*int64(i)
			if event == nil {
				if reverse {
					return c.errorf("read from %d: %w: seq %d is not there, and %d is", from, store.ErrCorrupt, s, from)
				}
				return nil
			}
			if !fn(s, event) {
				return nil
			}
		}
		if one {
			return nil
		}
		seq += step * n
		width = min(2*width, mostBatch)
	}
	return nil
}

// fetch reads the n events from seq on by step at once; an event not
// there is nil, and so are those after it.
func (c *Conversation) fetch(ctx context.Context, seq, step, n int64) ([][]byte, error) {
	out := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			b, _, err := c.get(ctx, c.events+eventName(seq+step*i), event.MaxBytes)
			if errors.Is(err, storage.ErrObjectNotExist) {
				return
			}
			out[i], errs[i] = b, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("seq %d: %w", seq+step*int64(i), err)
		}
		if out[i] == nil {
			return out[:i+1], nil
		}
	}
	if len(out) > 0 {
		c.sawSeq(max(seq, seq+step*(n-1)))
	}
	return out, nil
}
