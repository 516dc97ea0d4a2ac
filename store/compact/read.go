package compact

import (
	"bytes"
	"context"
	"fmt"

	"lnk.dev/linkharness/store/event"
)

// Last returns the highest seq written, or 0. It reads the tail and the
// seal at the end of events.zst, under the lock, shared.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	defer c.buf.trim()
	var s snap
	if ok, err := c.snapshot(ctx, &s, false); !ok {
		return 0, err
	}
	return s.last(), nil
}

// Read calls fn for each event from seq from, forward or, with reverse,
// back to seq 1; from <= 0 means the last event. It takes in the tail and
// the end of events.zst under the lock, shared, then lets go: the frames
// before that end never change. It decompresses only the frames holding
// the events it hands out: a unit is found walking back from the end by
// the seals, or forward from the start by the frames' headers, whichever
// is nearer.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.buf.trim()
	var s snap
	ok, err := c.snapshot(ctx, &s, false)
	if err != nil {
		if reverse || from != 1 || !s.whole {
			return err
		}
		// Forward from the start, what is whole before the damage is
		// read, and the damage reported after it.
		return c.readBefore(ctx, &s, err, fn)
	}
	if !ok {
		return nil
	}
	last := s.last()
	if last == 0 {
		return nil
	}
	if from <= 0 || (reverse && from > last) {
		from = last
	}
	if from > last {
		return nil
	}
	src := &c.fsrc
	*src = fileSource{c: c}
	if s.framed > 0 {
		if err := src.init(); err != nil {
			return err
		}
		src.size = s.end // nothing past the whole units is read
	}
	if reverse {
		return c.readBackward(ctx, &s, src, from, fn)
	}
	return c.readForward(ctx, &s, src, from, fn)
}

func (c *Conversation) readBackward(ctx context.Context, s *snap, src *fileSource, from int64, fn func(int64, []byte) bool) error {
	seq := from
	if seq > s.framed {
		if over, err := linesBack(ctx, s.tail[s.skip:], s.tlast, seq, fn); over {
			return err
		}
		seq = s.framed
	}
	u := s.lastUnit
	for seq > 0 {
		for u.first() > seq {
			var err error
			if u, err = c.unitBefore(src, s, u); err != nil {
				return err
			}
		}
		data, err := c.decode(src, u)
		if err != nil {
			return err
		}
		// Skip the unit's events after seq, then hand out the rest.
		if over, err := linesBack(ctx, data, u.last, seq, fn); over {
			return err
		}
		seq = u.first() - 1
	}
	return nil
}

func (c *Conversation) readForward(ctx context.Context, s *snap, src *fileSource, from int64, fn func(int64, []byte) bool) error {
	seq := from
	if seq <= s.framed {
		u, err := c.unitHolding(src, s, seq)
		if err != nil {
			return err
		}
		for {
			data, err := c.decode(src, u)
			if err != nil {
				return err
			}
			if over, err := linesOn(ctx, data, u.first(), seq, fn); over {
				return err
			}
			seq = u.last + 1
			if u.end() >= s.end {
				break
			}
			if u, err = c.unitAt(src, u.end(), seq); err != nil {
				return err
			}
		}
	}
	_, err := linesOn(ctx, s.tail[s.skip:], s.framed+1, seq, fn)
	return err
}

// linesBack hands fn the lines in b, each ending in '\n', the last of them
// seq last, from the last back, leaving out those after seq. It reports
// whether the read is over: fn stopped it, or ctx is done (err).
func linesBack(ctx context.Context, b []byte, last, seq int64, fn func(int64, []byte) bool) (bool, error) {
	for k := last; len(b) > 0; k-- {
		i := bytes.LastIndexByte(b[:len(b)-1], '\n')
		line := b[i+1 : len(b)-1]
		b = b[:i+1]
		if k > seq {
			continue
		}
		if over, err := give(ctx, k, line, fn); over {
			return true, err
		}
	}
	return false, nil
}

// linesOn hands fn the lines in b, each ending in '\n', the first of them
// seq first, in order, leaving out those before seq. It reports whether
// the read is over, as linesBack.
func linesOn(ctx context.Context, b []byte, first, seq int64, fn func(int64, []byte) bool) (bool, error) {
	for k := first; len(b) > 0; k++ {
		i := bytes.IndexByte(b, '\n')
		line := b[:i]
		b = b[i+1:]
		if k < seq {
			continue
		}
		if over, err := give(ctx, k, line, fn); over {
			return true, err
		}
	}
	return false, nil
}

// give hands fn the line of seq k and reports whether the read is over:
// fn stopped it, or ctx is done (err).
func give(ctx context.Context, k int64, line []byte, fn func(int64, []byte) bool) (bool, error) {
	if !fn(k, line) {
		return true, nil
	}
	err := ctx.Err()
	return err != nil, err
}

// unitHolding finds the unit holding seq, which is framed: walking back
// from the last unit when seq is in the later half, else forward from the
// thread frame.
func (c *Conversation) unitHolding(src *fileSource, s *snap, seq int64) (unit, error) {
	if seq > s.framed/2 {
		u := s.lastUnit
		for u.first() > seq {
			var err error
			if u, err = c.unitBefore(src, s, u); err != nil {
				return unit{}, err
			}
		}
		return u, nil
	}
	var found unit
	_, err := walkUnits(src, s.threadEnd, func(u unit) bool {
		found = u
		return u.last < seq
	})
	if err != nil {
		return unit{}, c.corrupt(err)
	}
	if found.last < seq {
		return unit{}, &CorruptError{Path: c.frames, Offset: s.threadEnd, Problem: fmt.Sprintf("no frame holds seq %d, though the last seal says %d", seq, s.framed)}
	}
	return found, nil
}

// unitBefore returns the unit before u, from the seal just before it.
func (c *Conversation) unitBefore(src *fileSource, s *snap, u unit) (unit, error) {
	if u.off-SealSize < s.threadEnd+9 {
		return unit{}, &CorruptError{Path: c.frames, Offset: u.off, Problem: fmt.Sprintf("the frame of seqs %d to %d is the first, not seq 1's", u.first(), u.last)}
	}
	b, err := src.at(u.off-SealSize, SealSize)
	if err != nil {
		return unit{}, c.shortRead(u.off, err)
	}
	p, ok := parseSeal(b, u.off)
	if !ok || p.off < s.threadEnd || p.last != u.first()-1 {
		return unit{}, &CorruptError{Path: c.frames, Offset: u.off - SealSize, Problem: fmt.Sprintf("no seal of the frame before seq %d", u.first())}
	}
	return p, nil
}

// unitAt walks the unit at off by its headers; it must start at seq first.
func (c *Conversation) unitAt(src *fileSource, off, first int64) (unit, error) {
	n, _, err := walkFrame(src, off)
	if err != nil {
		return unit{}, c.corrupt(c.shortRead(off, err))
	}
	b, err := src.at(off+n, SealSize)
	if err != nil {
		return unit{}, c.shortRead(off, err)
	}
	u, ok := parseSeal(b, off+n+SealSize)
	if !ok || u.n != n || u.first() != first {
		return unit{}, &CorruptError{Path: c.frames, Offset: off + n, Problem: fmt.Sprintf("no seal of the frame of seq %d", first)}
	}
	return u, nil
}

// shortRead turns a read that ran past the whole units into corruption:
// the seals said the bytes were there.
func (c *Conversation) shortRead(off int64, err error) error {
	if err == errCut {
		return &CorruptError{Path: c.frames, Offset: off, Problem: "a frame runs past the last whole unit"}
	}
	return err
}

// decode decompresses unit u into dbuf and checks it holds u's events,
// whole lines with the seal's seqs.
func (c *Conversation) decode(src *fileSource, u unit) ([]byte, error) {
	if u.n > MaxFrameContent+MaxFrameContent/8+1<<10 {
		return nil, &CorruptError{Path: c.frames, Offset: u.off, Problem: "a frame longer than any fold makes"}
	}
	cb := grow(&c.buf.frame, int(u.n))
	if err := readAt(c.zf, cb, u.off); err != nil {
		return nil, err
	}
	c.bsrc = bytesSource{b: cb, base: u.off}
	n, content, err := walkFrame(&c.bsrc, u.off)
	c.bsrc = bytesSource{}
	if err == nil && n != u.n {
		err = bad(u.off, "a data frame of %d bytes; its seal says %d", n, u.n)
	}
	if err != nil {
		return nil, c.corrupt(c.shortRead(u.off, err))
	}
	c.decoded++
	dec, err := decoders.get()
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	out, err := dec.DecodeAll(cb, grow(&c.buf.plain, int(content)+64)[:0])
	decoders.put()
	if err != nil {
		return nil, &CorruptError{Path: c.frames, Offset: u.off, Problem: "the frame does not decompress: " + err.Error()}
	}
	c.buf.plain = out[:0]
	if int64(len(out)) != content || len(out) == 0 || out[len(out)-1] != '\n' {
		return nil, &CorruptError{Path: c.frames, Offset: u.off, Problem: "the frame does not hold whole lines"}
	}
	want := u.first()
	for b := out; len(b) > 0; want++ {
		i := bytes.IndexByte(b, '\n')
		seq, err := event.SeqOf(b[:i])
		if err != nil || seq != want || want > u.last {
			return nil, &CorruptError{Path: c.frames, Offset: u.off, Problem: fmt.Sprintf("the frame's line %d is not seq %d", want-u.first()+1, want)}
		}
		b = b[i+1:]
	}
	if want != u.last+1 {
		return nil, &CorruptError{Path: c.frames, Offset: u.off, Problem: fmt.Sprintf("the frame holds %d events; its seal says %d", want-u.first(), u.count)}
	}
	return out, nil
}

// find returns the bytes of seq, which is written: from the tail, or from
// the frame holding it.
func (c *Conversation) find(s *snap, seq int64) ([]byte, error) {
	var got []byte
	src := &c.fsrc
	*src = fileSource{c: c}
	if seq <= s.framed {
		if err := src.init(); err != nil {
			return nil, err
		}
		src.size = s.end
	}
	err := c.readForward(context.Background(), s, src, seq, func(_ int64, ev []byte) bool {
		got = ev
		return false
	})
	return got, err
}

// readBefore reads forward from seq 1 what s holds whole before damage,
// and returns damage, or nil if fn stopped first.
func (c *Conversation) readBefore(ctx context.Context, s *snap, damage error, fn func(int64, []byte) bool) error {
	if s.last() == 0 {
		return damage
	}
	src := &c.fsrc
	*src = fileSource{c: c}
	if s.framed > 0 {
		if err := src.init(); err != nil {
			return err
		}
		src.size = s.end
	}
	stopped := false
	err := c.readForward(ctx, s, src, 1, func(seq int64, ev []byte) bool {
		stopped = !fn(seq, ev)
		return !stopped
	})
	if err != nil || stopped {
		return err
	}
	return damage
}
