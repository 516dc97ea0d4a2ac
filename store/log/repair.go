package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"lnk.dev/linkharness/store/internal/disk"
)

// repair cuts the torn final line [end, size) off the log, once its bytes
// are durable in the torn file beside it. The caller holds the writers'
// lock and writes after it; its fdatasync makes the cut durable.
func (c *Conversation) repair(end, size int64) error {
	n := size - end
	if n > maxLine {
		// One write makes at most maxLine bytes: this is no torn write.
		return c.corrupt(end, "%d bytes after the last line end, more than one write makes", n)
	}
	if err := c.keep(Cut{From: FileName, Offset: end, Bytes: n, To: TornFileName}); err != nil {
		return err
	}
	if err := c.f.Truncate(end); err != nil {
		return fmt.Errorf("log: cut the torn tail of %s at offset %d: %w", c.path, end, err)
	}
	return nil
}

// keep moves the log's bytes cut describes to the file cut.To beside it,
// durably (disk.KeepCut).
func (c *Conversation) keep(cut Cut) error {
	err := disk.KeepCut(c.fs, c.dir, disk.Cut(cut), c.f, FileMode)
	if errors.Is(err, disk.ErrCutShort) {
		err = c.corrupt(cut.Offset, "the file was cut short while read")
	}
	if err != nil {
		return fmt.Errorf("log: keep what is cut off %s in %s: %w", c.path, filepath.Join(c.dir, cut.To), err)
	}
	return nil
}

// Repaired is what Repair did.
type Repaired struct {
	Kept int64 // the events kept: seqs 1 to Kept
	Cuts []Cut // what it moved out of the log, if anything
}

// A Cut is bytes Repair moved out of a file of the conversation's folder:
// From's bytes [Offset, Offset+Bytes), now at the end of To, beside it.
type Cut struct {
	From   string // the file's name
	Offset int64
	Bytes  int64
	To     string // the file's name they were moved to
	Why    string // the damage found at Offset, or that they were a torn final line
}

// Repair makes a damaged log usable again: it keeps the longest run of
// whole lines from the start holding seqs 1, 2, … in order, and moves
// everything after it beside the log: a torn final line alone to
// events.jsonl.torn, as Append would, anything else to
// events.jsonl.damaged, as one record like the torn file's whose first
// line also says what was found at the offset. A log that is whole is
// left as it is. It holds the writers' lock throughout; it is for a
// conversation no turn is writing (lnk agent chat repair, with the agent
// stopped), since the events it cuts may be what a reader just read.
//
// A Repair cut short leaves the log as it was, or whole: the bytes moved
// are made durable beside it before the log is cut, so a Repair run again
// keeps them a second time, never loses them.
func (c *Conversation) Repair(ctx context.Context) (Repaired, error) {
	if err := ctx.Err(); err != nil {
		return Repaired{}, err
	}
	if _, err := c.fs.Stat(c.path); errors.Is(err, fs.ErrNotExist) {
		return Repaired{}, nil // nothing to repair, and nothing to create
	}
	if err := c.Commit(ctx); err != nil {
		return Repaired{}, err
	}
	if _, err := c.open(true); err != nil {
		return Repaired{}, err
	}
	defer c.trim()
	if err := c.f.Lock(ctx, true); err != nil {
		return Repaired{}, c.lockError(err)
	}
	defer c.f.Unlock()
	c.mark = c.fs.Committer().Mark()
	c.tip = tip{} // what it cuts changes the end
	st, err := c.stat()
	if err != nil {
		return Repaired{}, err
	}
	size := st.Size

	// whole is where the whole lines end; why is what is wrong after it.
	var whole int64
	var why string
	seq := int64(1)
	f := forward{c: c, end: size, chunk: chunkSize}
	for {
		if err := ctx.Err(); err != nil {
			return Repaired{}, err
		}
		line, off, err := f.next()
		if err == io.EOF {
			break
		}
		err = c.shrunk(f.off, err) // under the lock: the file was cut by hand
		if err == nil {
			err = c.seqDue(line, off, seq)
		}
		if ce := (*CorruptError)(nil); errors.As(err, &ce) {
			why = ce.Problem
			break
		}
		if err != nil {
			return Repaired{}, err
		}
		whole = off + int64(len(line)) + 1
		seq++
	}
	r := Repaired{Kept: seq - 1}
	if whole == size {
		return r, nil
	}
	cut := Cut{From: FileName, Offset: whole, Bytes: size - whole, To: DamagedFileName, Why: why}
	if why == "" {
		if cut.Bytes <= maxLine {
			cut.To, cut.Why = TornFileName, "a torn final line"
		} else {
			cut.Why = fmt.Sprintf("%d bytes after the last line end, more than one write makes", cut.Bytes)
		}
	}
	if err := c.keep(cut); err != nil {
		return r, err
	}
	if err := c.f.Truncate(whole); err != nil {
		return r, fmt.Errorf("log: cut %s at offset %d: %w", c.path, whole, err)
	}
	if err := c.sync(); err != nil {
		return r, err
	}
	r.Cuts = append(r.Cuts, cut)
	return r, nil
}
