package compact

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/rules"
)

// Append writes event as the tail's line of seq, durably, under the
// writers' lock, and folds the tail into the next frame once it holds
// FoldEvents events or FoldBytes bytes. Before writing it cuts off an
// incomplete final line (kept in events.jsonl.torn), empties a tail a fold
// stopped before emptying, and folds a tail whose fold is due from a
// failed fold before. It refuses a seq past the next (store.ErrGap) and a
// taken seq holding other bytes (store.ErrSeqTaken), and accepts the same
// bytes again. An event that is not one line of one JSON object whose seq
// is seq, or over event.MaxBytes, is store.ErrBadEvent.
//
// Append returns nil once the event is durable, even if the fold after it
// failed: the event is kept in the tail, and the next Append folds first
// and returns that fold's error if it fails again, appending nothing. Its
// fdatasync of the tail makes the events appended deferred before it
// durable too; if it fails, it cuts them off with its own.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.append(ctx, seq, event, false)
}

// AppendDeferred is Append without the tail's fdatasync
// (store.Deferred): the line is written, and made durable by the next
// Append's or Commit's fdatasync, or by a fold, which syncs all it frames.
// The writers' lock is let go between, since readers take it shared; the
// turn's lease (its folder's flock) keeps other turns' writers out.
func (c *Conversation) AppendDeferred(ctx context.Context, seq int64, event []byte) error {
	return c.append(ctx, seq, event, true)
}

// Commit makes the lines appended deferred durable; with none, it does
// nothing. If the fdatasync fails, it cuts them off.
func (c *Conversation) Commit(ctx context.Context) error {
	if c.syncs.from < 0 {
		return nil
	}
	var s snap
	if err := c.begin(ctx, &s); err != nil {
		return err
	}
	defer c.unlock()
	if c.syncs.from < 0 {
		return nil
	}
	return c.syncDeferred()
}

// lock opens the tail for writing and takes the writers' lock. Once it
// returns nil, the caller calls unlock when it is done.
func (c *Conversation) lock(ctx context.Context) error {
	if _, err := c.openTail(true); err != nil {
		return err
	}
	if err := c.tf.Lock(ctx, true); err != nil {
		c.buf.trim()
		return c.lockError(err)
	}
	return nil
}

// unlock lets go of the writers' lock, and of the files after a failed
// fdatasync, and trims the buffers.
func (c *Conversation) unlock() {
	c.tf.Unlock()
	if c.syncs.stale {
		c.drop()
		c.syncs.stale = false
	}
	c.buf.trim()
}

// begin takes the writers' lock and the snapshot under it into s, and
// forgets the deferred lines it shows durable or gone. Once it returns
// nil, the caller calls unlock when it is done.
func (c *Conversation) begin(ctx context.Context, s *snap) error {
	if err := c.lock(ctx); err != nil {
		return err
	}
	if _, err := c.snapshot(ctx, s, true); err != nil {
		c.unlock()
		return err
	}
	c.pending(s)
	return nil
}

// pending forgets the deferred lines s shows durable or gone: framed (a
// fold syncs what it frames), or no longer in the tail.
func (c *Conversation) pending(s *snap) {
	if c.syncs.from >= 0 && (s.framed >= c.syncs.first || s.tlast < c.syncs.first || c.syncs.from > s.tend) {
		c.syncs.from = -1
	}
	if c.syncs.from < 0 {
		c.syncs.mark = c.fs.Committer().Mark()
	}
}

// syncDeferred makes the tail durable with the deferred lines in it, or
// cuts them off, never acknowledged, if its fdatasync fails.
func (c *Conversation) syncDeferred() error {
	if err := c.syncOrCut(c.tf, c.syncs.from); err != nil {
		return err
	}
	c.syncs.from = -1
	return nil
}

func (c *Conversation) append(ctx context.Context, seq int64, event []byte, deferred bool) error {
	if err := rules.Event(seq, event); err != nil {
		return fmt.Errorf("compact: append seq %d to %s: %w", seq, c.dir, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var s snap
	if err := c.begin(ctx, &s); err != nil {
		return err
	}
	defer c.unlock()
	last := s.last()
	switch {
	case seq > last+1:
		return fmt.Errorf("compact: append seq %d to %s: %w: the last is %d", seq, c.dir, store.ErrGap, last)
	case seq <= last:
		return c.again(&s, seq, event)
	}
	if err := c.settle(&s); err != nil {
		return err
	}
	if err := c.thread(&s, seq, event); err != nil {
		return err
	}
	if err := c.writeLine(&s, seq, event, deferred); err != nil {
		return err
	}
	if c.due(&s) {
		err := c.fold(&s)
		if err != nil && c.opts.Folded != nil {
			c.opts.Folded(FoldStats{Err: err})
		}
	}
	return nil
}

// again answers an append of a seq the conversation holds: the same bytes
// are success, made durable, and other bytes store.ErrSeqTaken.
func (c *Conversation) again(s *snap, seq int64, event []byte) error {
	old, err := c.find(s, seq)
	if err != nil {
		return err
	}
	if !bytes.Equal(old, event) {
		return fmt.Errorf("compact: append seq %d to %s: %w", seq, c.dir, store.ErrSeqTaken)
	}
	// The same bytes: a retry whose answer was lost, or of an Append whose
	// fdatasync and cut failed. The writer that wrote them may have died
	// before its fdatasync, or they may be readable and not on the disk:
	// write the tail's lines again (see rewrite).
	if err := c.rewrite(c.tf, s.tail[:s.tend], 0, s.tend); err != nil {
		return err
	}
	if err := c.sync(c.zf); err != nil {
		return err
	}
	if c.syncs.from >= 0 {
		return c.syncDeferred()
	}
	return c.sync(c.tf)
}

// settle finishes what a writer before left undone, before an event is
// appended: it cuts off an incomplete final line, empties a tail a fold
// stopped before emptying, and folds a tail whose fold is due.
func (c *Conversation) settle(s *snap) error {
	if s.tend < s.tsize {
		if err := c.cutTail(s); err != nil {
			return err
		}
	}
	if s.skip > 0 && s.count == 0 {
		// A fold stopped after writing its unit, maybe before its
		// fdatasync (its writer died): make the unit durable, then empty
		// the tail.
		if err := c.syncUnit(s); err != nil {
			return err
		}
		if err := c.emptyTail(s); err != nil {
			return err
		}
	}
	if c.due(s) {
		return c.fold(s)
	}
	return nil
}

// thread makes sure events.zst starts with its thread frame, durably,
// before seq is appended: seq 1 writes it, or writes again one another
// writer wrote; any other seq finds it there.
func (c *Conversation) thread(s *snap, seq int64, event []byte) error {
	if s.threadEnd == 0 {
		if seq != 1 {
			return &CorruptError{Path: c.frames, Offset: 0, Problem: fmt.Sprintf("no thread frame, and the tail holds seq %d", s.last())}
		}
		if err := c.writeThread(s, event); err != nil {
			return err
		}
	} else if seq == 1 {
		// The thread frame is another writer's, who may have died before
		// its fdatasync, or whose fdatasync and cut failed: seq 1 is not
		// acknowledged without it.
		if err := c.rewrite(c.zf, nil, 0, s.threadEnd); err != nil {
			return err
		}
		if err := c.syncOrCut(c.zf, 0); err != nil {
			return err
		}
	}
	if seq == 1 && !c.opts.Unsynced {
		// The files are new: their names are durable once the folder is
		// synced. An Append that failed after writing the thread frame
		// may not have synced it, so every Append of seq 1 does.
		return c.syncDir()
	}
	return nil
}

// FoldStats is what one fold did, for Options.Folded.
type FoldStats struct {
	Events int           // events framed
	Raw    int           // their bytes, as lines
	Framed int           // the unit's bytes, seal included
	Took   time.Duration // from reading the tail to emptying it, syncs included
	Err    error         // why it failed; the events stay in the tail
}

// due says whether the tail's unframed events are to be folded.
func (c *Conversation) due(s *snap) bool {
	return s.count >= int64(c.foldEvents) || int64(len(s.tail)-s.skip) >= FoldBytes
}

// writeLine appends event's line to the tail and makes it durable, with
// the deferred lines before it, unless deferred is set: then it is left
// for the next sync, and the Conversation says where it starts.
func (c *Conversation) writeLine(s *snap, seq int64, event []byte, deferred bool) error {
	line := make([]byte, 0, len(event)+1)
	line = append(append(line, event...), '\n')
	if _, err := c.tf.WriteAt(line, s.tend); err != nil {
		// Part of it may be there: cut it, or the next Append will.
		c.tf.Truncate(s.tend)
		return fmt.Errorf("compact: append to %s at offset %d: %w", c.tail, s.tend, err)
	}
	switch {
	case deferred && c.syncs.from < 0:
		c.syncs.from, c.syncs.first = s.tend, seq
	case deferred:
	case c.syncs.from >= 0:
		if err := c.syncDeferred(); err != nil {
			return err
		}
	default:
		if err := c.syncOrCut(c.tf, s.tend); err != nil {
			return err
		}
	}
	s.tail = append(s.tail[:s.tend:s.tend], line...) // a copy: tbuf may be shorter
	s.tend += int64(len(line))
	s.tsize = s.tend
	s.count++
	s.tlast = seq
	return nil
}

// writeThread starts events.zst with the thread frame, naming the thread
// event 1 names, cutting off a thread frame cut short first. The caller
// syncs the folder, which may hold events.zst new.
func (c *Conversation) writeThread(s *snap, ev []byte) error {
	var e event.Event
	var dec event.Decoder
	if err := dec.Decode(ev, &e); err != nil {
		return fmt.Errorf("compact: append seq 1 to %s: %w", c.dir, err)
	}
	if s.zsize > 0 {
		if err := c.cutFrames(s, 0); err != nil {
			return err
		}
	}
	b := appendThreadFrame(nil, e.Thread)
	if len(b)-8 > MaxThreadFrame {
		return fmt.Errorf("compact: append seq 1 to %s: %w: a thread name of %d bytes", c.dir, store.ErrBadEvent, len(e.Thread))
	}
	if _, err := c.zf.WriteAt(b, 0); err != nil {
		c.zf.Truncate(0)
		return fmt.Errorf("compact: write the thread frame of %s: %w", c.frames, err)
	}
	if err := c.syncOrCut(c.zf, 0); err != nil {
		return err
	}
	s.zsize, s.threadEnd, s.end = int64(len(b)), int64(len(b)), int64(len(b))
	return nil
}

// fold writes the tail's unframed events as the next unit of events.zst,
// makes it durable, then empties the tail.
func (c *Conversation) fold(s *snap) (err error) {
	start := time.Now()
	lines := s.tail[s.skip:]
	st := FoldStats{Events: int(s.count), Raw: len(lines)}
	defer func() {
		if c.opts.Folded != nil && err == nil {
			st.Took = time.Since(start)
			c.opts.Folded(st)
		}
	}()
	if s.threadEnd == 0 {
		return &CorruptError{Path: c.frames, Offset: 0, Problem: "no thread frame to fold after"}
	}
	if s.end < s.zsize {
		if err := c.cutFrames(s, s.end); err != nil {
			return err
		}
	}
	enc, err := encoders.get()
	if err != nil {
		return fmt.Errorf("compact: fold: %w", err)
	}
	u := enc.EncodeAll(lines, grow(&c.buf.frame, len(lines)/2+SealSize)[:0])
	encoders.put()
	n := len(u)
	u = appendSeal(u, n, int(s.count), s.tlast)
	c.buf.frame = u[:0]
	if _, err := c.zf.WriteAt(u, s.end); err != nil {
		c.zf.Truncate(s.end)
		return fmt.Errorf("compact: fold into %s at offset %d: %w", c.frames, s.end, err)
	}
	if err := c.syncOrCut(c.zf, s.end); err != nil {
		return err
	}
	s.lastUnit = unit{off: s.end, n: int64(n), count: s.count, last: s.tlast}
	s.end += int64(len(u))
	s.zsize, s.framed = s.end, s.tlast
	st.Framed = len(u)
	return c.emptyTail(s)
}

// syncUnit makes events.zst durable when the tail holds the events of
// its last unit, before the tail is emptied of them, writing the unit
// again first (see rewrite). If the fdatasync
// fails, the unit is cut off, the tail holding its events from its first
// on, so the next fold frames them again.
func (c *Conversation) syncUnit(s *snap) error {
	if err := c.rewrite(c.zf, nil, s.lastUnit.off, s.end); err != nil {
		return err
	}
	err := c.sync(c.zf)
	if err == nil {
		return nil
	}
	if first, serr := event.SeqOf(s.tail[:bytes.IndexByte(s.tail, '\n')]); serr == nil && first <= s.lastUnit.first() {
		c.zf.Truncate(s.lastUnit.off)
	}
	return err
}

// emptyTail empties the tail once every event in it is framed.
func (c *Conversation) emptyTail(s *snap) error {
	if err := c.tf.Truncate(0); err != nil {
		return fmt.Errorf("compact: empty %s: %w", c.tail, err)
	}
	if err := c.sync(c.tf); err != nil {
		return err
	}
	s.tail, s.tsize, s.tend, s.skip, s.count, s.tlast = s.tail[:0], 0, 0, 0, 0, 0
	c.syncs.from = -1 // what it held is framed, and durable
	return nil
}

// cutTail cuts an incomplete final line off the tail, once it is kept in
// events.jsonl.torn.
func (c *Conversation) cutTail(s *snap) error {
	if err := c.keep(Cut{From: TailName, Offset: s.tend, Bytes: s.tsize - s.tend, To: TornTailName}, c.tf); err != nil {
		return err
	}
	if err := c.tf.Truncate(s.tend); err != nil {
		return fmt.Errorf("compact: cut the torn tail of %s at offset %d: %w", c.tail, s.tend, err)
	}
	s.tsize = s.tend
	return nil
}

// cutFrames cuts what follows end off events.zst, a unit or a thread
// frame cut short, once it is kept in events.zst.torn.
func (c *Conversation) cutFrames(s *snap, end int64) error {
	n := s.zsize - end
	if n > 2*MaxFrameContent {
		return &CorruptError{Path: c.frames, Offset: end, Problem: fmt.Sprintf("%d bytes after the last whole frame, more than one fold writes", n)}
	}
	if err := c.keep(Cut{From: FramesName, Offset: end, Bytes: n, To: TornFramesName}, c.zf); err != nil {
		return err
	}
	if err := c.zf.Truncate(end); err != nil {
		return fmt.Errorf("compact: cut %s at offset %d: %w", c.frames, end, err)
	}
	s.zsize = end
	return nil
}
