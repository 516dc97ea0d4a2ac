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
// returns after fdatasync. Into an empty log it writes only once the
// folder is synced, so a log holding a line has a durable name. An event
// that is not one line of one JSON object whose seq is seq, or is over
// event.MaxBytes, is store.ErrBadEvent. An Append that fails leaves the
// complete lines as they were, unless a cut after a failed fdatasync fails
// too; the same bytes again are then written again over themselves.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	if err := rules.Event(seq, event); err != nil {
		return fmt.Errorf("log: append seq %d to %s: %w", seq, c.path, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := c.open(true); err != nil {
		return err
	}
	defer c.trim()
	if err := c.f.Lock(ctx, true); err != nil {
		return c.lockError(err)
	}
	defer c.f.Unlock()

	e, err := c.readEnd(ctx, tailSize, true)
	if err != nil {
		return err
	}
	switch {
	case seq == e.last+1:
		return c.write(&e, event)
	case seq > e.last+1:
		return fmt.Errorf("log: append seq %d to %s: %w: the last is %d", seq, c.path, store.ErrGap, e.last)
	}
	line, off, err := c.find(&e, seq)
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
	// which a reader cannot tell, and make them durable.
	line = c.grow(len(event) + 1)
	copy(line, event)
	line[len(event)] = '\n'
	if _, err := c.f.WriteAt(line, off); err != nil {
		return fmt.Errorf("log: append seq %d to %s again at offset %d: %w", seq, c.path, off, err)
	}
	return c.sync()
}

// write appends event after the last complete line.
func (c *Conversation) write(e *end, event []byte) error {
	if e.end == 0 {
		// No line yet: the file may be new. Make its name durable before
		// a line is written in it. A writer that dies, or whose folder
		// sync fails, before that leaves no line, and the next Append
		// syncs the folder again; so a log holding a line has a durable
		// name, whoever wrote it, and a retry that finds its line there
		// need only sync the file.
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
		return fmt.Errorf("log: append to %s at offset %d: %w", c.path, e.end, err)
	}
	// If the fdatasync fails, cut the line off, under the lock still. A
	// failed fdatasync may leave it to be read though it is not on the
	// disk, and a later one that succeeds does not put it there (Linux
	// marks its pages written): a retried Append would find it, take it
	// for its own and acknowledge what a crash loses, and the next
	// Append would follow a line the disk does not hold. Cut off, it is
	// written again by the retry. A reader may have read it between the
	// write and the cut, as it may read any line before its Append
	// returns: a line is acknowledged only by its Append's nil. A forward
	// read that meets the cut ends there (see readForward). If the cut
	// fails too, the retry finds the line and writes it again over
	// itself (see Append).
	return c.syncOrCut(e.end)
}
