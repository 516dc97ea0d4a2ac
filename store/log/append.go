package log

import (
	"bytes"
	"context"
	"fmt"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/rules"
)

// Append writes event as the line of seq, durably, under the writers' lock:
// it reads the last complete line's seq; refuses a seq past the next
// (store.ErrGap) or a taken seq holding other bytes (store.ErrSeqTaken),
// and accepts the same bytes again; cuts a torn final line off, keeping it
// in events.jsonl.torn; writes the line and its '\n' in one write; and
// returns after fdatasync, which makes the lines appended deferred before
// it durable too. Into an empty log it writes only once the folder is
// synced, so a log holding a line has a durable name. An event that is
// not one line of one JSON object whose seq is seq, or is over
// event.MaxBytes, is store.ErrBadEvent. An Append that fails leaves the
// complete lines as they were, unless a cut after a failed fdatasync fails
// too; the same bytes again are then written again over themselves. A
// failed fdatasync cuts the lines appended deferred before it too: they
// were never acknowledged.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.append(ctx, seq, event, false)
}

// AppendDeferred is Append without the fdatasync (store.Deferred): the
// line is written, and the writers' lock is kept from then until the
// Append or Commit that makes it durable, or Close. Held so, no other
// writer appends after a line that is not durable, and the calls between
// read the end from memory. A seq already taken is made durable at once,
// as Append does.
func (c *Conversation) AppendDeferred(ctx context.Context, seq int64, event []byte) error {
	return c.append(ctx, seq, event, true)
}

// Hold takes the writers' lock, as AppendDeferred does, and returns the
// last seq read under it: the appends that follow read the end from
// memory, with no fstat. The lock is kept until the Append or Commit that
// makes them durable, or a Commit or Close with none appended. It opens
// the log to write, creating none: with no log it is Last, and holds
// nothing.
func (c *Conversation) Hold(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !c.held {
		if ok, err := c.open(false); !ok || err != nil {
			return 0, err
		}
		if !c.writable {
			return c.Last(ctx) // read-only: nothing of it will be appended here
		}
		if err := c.lockWriters(ctx); err != nil {
			return 0, err
		}
	}
	defer c.trim()
	e, err := c.readEnd(ctx, tailSize, true)
	if err != nil {
		c.release()
		return 0, err
	}
	// Under the lock the end is known from here, unless a torn line is
	// past it, which the first append cuts.
	c.tip.ok = c.tip.ok || (e.end == e.size && c.tip.end == e.end)
	return e.last, nil
}

// lockWriters takes the writers' lock, held between calls from here:
// nothing of this Conversation's waits for a sync yet.
func (c *Conversation) lockWriters(ctx context.Context) error {
	if err := c.f.Lock(ctx, true); err != nil {
		return c.lockError(err)
	}
	c.held, c.from = true, -1
	c.mark = c.fs.Committer().Mark()
	return nil
}

// Commit makes the lines appended deferred durable and lets go of the
// writers' lock; with none, it lets go of the lock a Hold took, and with
// no lock it does nothing. If the fdatasync fails, it cuts them off, as
// Append does its own line.
func (c *Conversation) Commit(ctx context.Context) error {
	if !c.held {
		return nil
	}
	defer c.unlock()
	if c.from < 0 {
		return nil // held, and nothing appended since
	}
	return c.commit(c.from)
}

func (c *Conversation) append(ctx context.Context, seq int64, event []byte, deferred bool) error {
	if err := rules.Event(seq, event); err != nil {
		return fmt.Errorf("log: append seq %d to %s: %w", seq, c.path, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !c.held {
		if _, err := c.open(true); err != nil {
			return err
		}
		if err := c.lockWriters(ctx); err != nil {
			return err
		}
	}
	defer c.trim()
	e, err := c.readEnd(ctx, tailSize, true)
	if err != nil {
		c.release()
		return err
	}
	switch {
	case seq == e.last+1:
		first := c.from < 0
		if first {
			c.from = e.end
		}
		err := c.write(&e, seq, event)
		if err != nil && first {
			c.from = -1 // nothing of this Conversation's waits for a sync
		}
		if deferred && err == nil {
			return nil // the lock stays held until the line is durable
		}
		if err == nil {
			err = c.commit(c.from)
		}
		c.release()
		return err
	case seq > e.last+1:
		c.release()
		return fmt.Errorf("log: append seq %d to %s: %w: the last is %d", seq, c.path, store.ErrGap, e.last)
	}
	defer c.release()
	return c.again(&e, seq, event)
}

// again appends the event at seq, taken, again: its line must be the
// same bytes. It is a function of its own, its frame apart from append's,
// which is on its caller's stack at every append.
func (c *Conversation) again(e *end, seq int64, event []byte) error {
	line, off, err := c.find(e, seq)
	if err != nil {
		return err
	}
	if !bytes.Equal(line, event) {
		return fmt.Errorf("log: append seq %d to %s: %w by the line at offset %d", seq, c.path, store.ErrSeqTaken, off)
	}
	// The same bytes: a retry whose answer was lost, or of an Append whose
	// fdatasync failed and whose cut failed too. The writer that wrote
	// them may have died before its fdatasync; or a failed fdatasync may
	// have left them readable though they are not on the disk, and no
	// later one puts them there. So write them again over themselves,
	// which a reader cannot tell, and make them durable, with what this
	// Conversation appended deferred before.
	line = c.grow(len(event) + 1)
	copy(line, event)
	line[len(event)] = '\n'
	if _, err := c.f.WriteAt(line, off); err != nil {
		return fmt.Errorf("log: append seq %d to %s again at offset %d: %w", seq, c.path, off, err)
	}
	return c.commit(c.from)
}

// release lets go of the writers' lock unless lines appended deferred
// wait for their fdatasync under it.
func (c *Conversation) release() {
	if c.held && c.from < 0 {
		c.unlock()
	}
}

// unlock lets go of the writers' lock.
func (c *Conversation) unlock() {
	if c.held && c.f != nil {
		c.f.Unlock()
	}
	c.held, c.from, c.tip.ok = false, -1, false
}

// write appends event, the line of seq, after the last complete line.
func (c *Conversation) write(e *end, seq int64, event []byte) error {
	if e.end == 0 {
		// No line yet: the file may be new. Make its name durable, and
		// its folder's, before a line is written in it. A writer that
		// dies, or whose folder sync fails, before that leaves no line,
		// and the next Append syncs the folders again; so a log holding a
		// line has durable names, whoever wrote it, and a retry that
		// finds its line there need only sync the file.
		if err := c.syncDir(); err != nil {
			return err
		}
	}
	if e.end < e.size {
		if err := c.repair(e.end, e.size); err != nil {
			return err
		}
	}
	line := c.grow(len(event) + 1)
	copy(line, event)
	line[len(event)] = '\n'
	if _, err := c.f.WriteAt(line, e.end); err != nil {
		// Part of it may be there: cut it, so the file ends where it
		// did. If that fails too, the next Append cuts it as torn.
		c.f.Truncate(e.end)
		c.tip = tip{}
		return fmt.Errorf("log: append to %s at offset %d: %w", c.path, e.end, err)
	}
	// Under the lock the end is known from here: the calls until it is
	// let go read it from memory.
	c.tip = tip{end: e.end + int64(len(line)), last: seq, off: e.end, ok: true}
	c.last = append(c.last[:0], event...)
	return nil
}
