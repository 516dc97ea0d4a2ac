package log

import (
	"bytes"
	"context"
	"io"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/disk"
)

// Readers take no lock. That is safe because writers never change a
// complete line: they only add bytes after the end, and cut a torn tail,
// which lies after the last '\n'. So bytes before the last '\n' a reader
// has seen stay as they are, and a reader ignores everything after it.
//
// One case needs care: a reader reading the end while a writer cuts a torn
// tail and writes a new line in its place might see some of the old bytes
// and some of the new, with the new line's '\n' after them. Such a read
// overlaps a cut and a write, which change the file's size and its change
// time, so readEnd reads both again after reading the end, reads again if
// either changed, and after a few tries takes the writers' lock, shared,
// for one read. Everything further back is read without a second look.

// stableTries is how many reads of the end readEnd makes while writers keep
// changing it, before it waits for them.
const stableTries = 3

// end is what a read of the file's end found.
type end struct {
	size int64 // the file's size
	end  int64 // just past the last '\n': complete lines end here

	last int64  // seq of the last complete line; 0 when there is none
	line []byte // that line, without its '\n', in the buffer
	off  int64  // where it starts

	back backward // reads the lines before it
}

// near says whether seq is found by scanning back from the end.
func (e *end) near(seq int64) bool { return e.last-seq <= backScan }

// readEnd reads the last complete line, reading n bytes first. With locked
// set the caller holds the writers' lock, so the end cannot change.
//
// The end found is kept (tip) with the file's size and change stamp, and
// while they stay the same it is not read again: the next call makes one
// fstat; so does one after this Conversation made durable a line it
// wrote at the end, while the size is the same (tip.synced). While this
// Conversation holds the lock with a line it wrote at the end, it makes
// none.
func (c *Conversation) readEnd(ctx context.Context, n int, locked bool) (end, error) {
	if c.held && c.tip.ok {
		return c.tipEnd(c.tip.end), nil // this Conversation wrote the end, under its lock
	}
	locked = locked || c.held
	for try := 0; ; try++ {
		if !locked && try == stableTries {
			if err := c.f.Lock(ctx, false); err != nil {
				return end{}, c.lockError(err)
			}
			e, err := c.readEnd(ctx, n, true)
			c.f.Unlock()
			return e, err
		}
		before, err := c.stat()
		if err != nil {
			return end{}, err
		}
		if (c.tip.stamp == before && before.Changed != 0) || (c.tip.synced && before.Size == c.tip.end) {
			return c.tipEnd(before.Size), nil // nothing changed since the end was read or made durable
		}
		size := before.Size
		e, err := c.readEndOnce(size, n)
		if locked {
			if err == errShrunk {
				err = c.corrupt(size, "the file shrank under the writers' lock")
			}
			if err == nil {
				c.keepTip(&e, before)
			}
			return e, err
		}
		if err == errShrunk {
			continue
		}
		after, serr := c.stat()
		if serr != nil {
			return end{}, serr
		}
		if after.Size == size && after.Changed == before.Changed {
			if err == nil {
				c.keepTip(&e, before)
			}
			return e, err
		}
	}
}

// tipEnd is the end kept in tip, in a file of size bytes.
func (c *Conversation) tipEnd(size int64) end {
	t := c.tip
	return end{size: size, end: t.end, last: t.last, line: c.last, off: t.off, back: backward{c: c, off: t.off}}
}

// keepTip keeps e, read from a file whose size and stamp were st, as tip.
func (c *Conversation) keepTip(e *end, st disk.Info) {
	c.last = append(c.last[:0], e.line...)
	c.tip = tip{end: e.end, last: e.last, off: e.off, stamp: st}
}

func (c *Conversation) readEndOnce(size int64, n int) (end, error) {
	e := end{size: size}
	for size > 0 {
		k := min(int64(n), size)
		buf := c.grow(int(k))
		if err := c.readAt(buf, size-k); err != nil {
			return end{}, err
		}
		i := lastNewline(buf)
		if i < 0 {
			if k == size {
				return e, nil // no complete line: all of it is torn
			}
			if k >= 2*maxLine {
				return end{}, c.corrupt(size-k, "no line ends in the last %d bytes", k)
			}
			n = 2 * int(k)
			continue
		}
		e.end = size - k + int64(i+1)
		e.back = backward{c: c, off: size - k, data: buf[:i+1]}
		// Past here e keeps where complete lines end even when the last
		// one is damaged: Read hands out the lines before the damage.
		line, off, err := e.back.prev()
		if err != nil {
			return e, err
		}
		seq, err := c.seqOf(line, off)
		if err != nil {
			return e, err
		}
		e.last, e.line, e.off = seq, line, off
		return e, nil
	}
	return e, nil
}

// seqOf returns the seq of the line at off, or why it is not an event.
func (c *Conversation) seqOf(line []byte, off int64) (int64, error) {
	if len(line) > event.MaxBytes {
		return 0, c.corrupt(off, "a line of %d bytes, longer than any event", len(line))
	}
	seq, err := event.SeqOf(line)
	if err != nil {
		return 0, c.corrupt(off, "not an event: %v", err)
	}
	// Append wrote valid JSON: a line that is not was changed since.
	if err := fastjson.ValidateBytes(line); err != nil {
		return 0, c.corrupt(off, "not an event: not valid JSON: %v", err)
	}
	return seq, nil
}

// seqDue checks that line, at offset off, is the event of seq want: a line
// that is no event (seqOf), or is another seq's, is damage.
func (c *Conversation) seqDue(line []byte, off, want int64) error {
	s, err := c.seqOf(line, off)
	if err == nil && s != want {
		err = c.corrupt(off, "seq %d where %d was due", s, want)
	}
	return err
}

// backward reads complete lines towards the start of the file.
type backward struct {
	c    *Conversation
	off  int64  // file offset of data[0]
	data []byte // the bytes not handed out yet, [off, off+len(data)), ending in '\n' unless empty
}

// prev returns the line before those handed out, without its '\n', and its
// offset; io.EOF at the start of the file. The line is valid until the
// next read.
func (b *backward) prev() ([]byte, int64, error) {
	for {
		if len(b.data) == 0 {
			if b.off == 0 {
				return nil, 0, io.EOF
			}
			if err := b.fill(b.off, chunkSize); err != nil {
				return nil, 0, err
			}
			continue
		}
		body := b.data[:len(b.data)-1]
		i := lastNewline(body)
		if i >= 0 || b.off == 0 {
			b.data = b.data[:i+1]
			return body[i+1:], b.off + int64(i+1), nil
		}
		// The line starts before what was read: read again, further
		// back, with room for it.
		if len(b.data) > maxLine {
			return nil, 0, b.c.corrupt(b.off, "a line longer than any event ends at offset %d", b.off+int64(len(b.data)))
		}
		if err := b.fill(b.off+int64(len(b.data)), max(chunkSize, 2*len(b.data))); err != nil {
			return nil, 0, err
		}
	}
}

// fill reads the n bytes before end, or all of them if there are fewer.
func (b *backward) fill(end int64, n int) error {
	k := min(int64(n), end)
	buf := b.c.grow(int(k))
	if err := b.c.readAt(buf, end-k); err != nil {
		return b.c.shrunk(end-k, err)
	}
	b.off, b.data = end-k, buf
	return nil
}

// forward reads complete lines towards the end of the file.
type forward struct {
	c     *Conversation
	off   int64  // file offset of data[0]
	data  []byte // the bytes read and not handed out yet
	end   int64  // where complete lines end
	chunk int    // how much to read at once
}

// next returns the next line, without its '\n', and its offset; io.EOF at
// end. The line is valid until the next read.
func (f *forward) next() ([]byte, int64, error) {
	for {
		if i := bytes.IndexByte(f.data, '\n'); i >= 0 {
			line, off := f.data[:i], f.off
			f.data, f.off = f.data[i+1:], f.off+int64(i+1)
			return line, off, nil
		}
		if f.off+int64(len(f.data)) >= f.end {
			return nil, 0, io.EOF
		}
		if len(f.data) > maxLine {
			return nil, 0, f.c.corrupt(f.off, "a line longer than any event")
		}
		// Read again from the start of the unfinished line, with room
		// for it: simpler than moving it, and it is rarely long.
		k := min(int64(max(f.chunk, 2*len(f.data))), f.end-f.off)
		buf := f.c.grow(int(k))
		if err := f.c.readAt(buf, f.off); err != nil {
			return nil, 0, err // errShrunk is the caller's to judge
		}
		f.data = buf
	}
}

// shrunk turns a short read of bytes before the end into corruption: no
// writer cuts a complete line but the last, its own, after its fdatasync
// failed, and a read back from the end or a bisection never reads that
// far once readEnd has found the end again.
func (c *Conversation) shrunk(off int64, err error) error {
	if err == errShrunk {
		return c.corrupt(off, "the file was cut short while read")
	}
	return err
}

// find returns the line holding seq, which is at most e.last, and its
// offset. Near the end it scans back from e; further back it bisects the
// file by offset, reading one line at each step.
func (c *Conversation) find(e *end, seq int64) ([]byte, int64, error) {
	if seq == e.last {
		return e.line, e.off, nil
	}
	if e.near(seq) {
		want := e.last - 1
		for {
			line, off, err := e.back.prev()
			if err == io.EOF {
				return nil, 0, c.corrupt(0, "the file starts at seq %d, not 1", want+1)
			}
			if err != nil {
				return nil, 0, err
			}
			if err := c.seqDue(line, off, want); err != nil {
				return nil, 0, err
			}
			if want == seq {
				return line, off, nil
			}
			want--
		}
	}
	// lo is a line start; the line holding seq starts in [lo, hi).
	lo, hi := int64(0), e.end
	for lo < hi {
		m := lo + (hi-lo)/2
		line, p, err := c.probe(m, e.end)
		if err != nil {
			return nil, 0, err
		}
		if p >= hi {
			hi = m
			continue
		}
		s, err := c.seqOf(line, p)
		if err != nil {
			return nil, 0, err
		}
		switch {
		case s == seq:
			return line, p, nil
		case s < seq:
			lo = p + int64(len(line)) + 1
		default:
			hi = m
		}
	}
	return nil, 0, c.corrupt(lo, "no line holds seq %d though seq %d is at the end", seq, e.last)
}

// probe returns the first line starting at or after m, and where it starts;
// that is end when there is none.
func (c *Conversation) probe(m, end int64) ([]byte, int64, error) {
	f := forward{c: c, off: m, end: end, chunk: probeSize}
	if m > 0 {
		// Start one byte early: if it is a '\n', a line starts at m.
		f.off = m - 1
		if _, _, err := f.next(); err != nil {
			if err == io.EOF {
				return nil, end, nil
			}
			return nil, 0, c.shrunk(m, err)
		}
	}
	line, p, err := f.next()
	if err == io.EOF {
		return nil, end, nil
	}
	if err != nil {
		return nil, 0, c.shrunk(m, err)
	}
	return line, p, nil
}

// Read calls fn for each event from seq from, forward or, with reverse,
// back to seq 1. from <= 0 means the last event; forward from past the
// last calls fn never, and reverse from past the last starts at the last.
// It reads only the lines it hands out, and what it takes to find the
// first of them. A line that is not the next event is corruption, reported
// with its offset; an incomplete final line is not read.
//
// Read takes no lock, so a writer never waits for a reader: no writer
// changes a line once its '\n' is written, and Read reads nothing after
// the last '\n' it found (see readEnd for the one race this needs); but
// a writer whose fdatasync failed cuts its line off, and a forward Read
// that meets that cut ends there, having handed out only lines that were
// there when it read them.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ok, err := c.open(false); !ok {
		return err
	}
	defer c.trim()
	e, err := c.readEnd(ctx, chunkSize, false)
	if err != nil {
		if reverse || from != 1 || e.end == 0 {
			return err
		}
		// The last line is damaged: what is before it is still read,
		// forward from the start, and the damage reported where the
		// read meets it.
		return c.readBefore(ctx, &e, err, fn)
	}
	if e.last == 0 {
		return nil
	}
	if !reverse && from == 1 {
		return c.readForward(ctx, 0, 1, &e, fn) // seq 1 starts the file
	}
	if from <= 0 || (reverse && from > e.last) {
		from = e.last
	}
	if from > e.last {
		return nil
	}
	line, off, err := c.find(&e, from)
	if err != nil {
		return err
	}
	if reverse {
		b := e.back // found from the end: b is just before it
		if !e.near(from) {
			b = backward{c: c, off: off}
		}
		return c.readBackward(ctx, &b, line, from, fn)
	}
	return c.readForward(ctx, off, from, &e, fn)
}

// readBackward hands out line, the line of seq, and the lines before it
// from b.
func (c *Conversation) readBackward(ctx context.Context, b *backward, line []byte, seq int64, fn func(int64, []byte) bool) error {
	for {
		if !fn(seq, line) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		l, off, err := b.prev()
		if err == io.EOF {
			if seq != 1 {
				return c.corrupt(0, "the file starts at seq %d, not 1", seq)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.seqDue(l, off, seq-1); err != nil {
			return err
		}
		line, seq = l, seq-1
	}
}

// readForward hands out the lines from off, where seq starts, to e's end.
func (c *Conversation) readForward(ctx context.Context, off, seq int64, e *end, fn func(int64, []byte) bool) error {
	f := forward{c: c, off: off, end: e.end, chunk: chunkSize}
	for {
		line, off, err := f.next()
		if err == io.EOF {
			return nil
		}
		if err == errShrunk {
			// A writer whose fdatasync failed cut its line off after e
			// was read (see write): the read ends where the log now
			// does. What it handed out was there when read.
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.seqDue(line, off, seq); err != nil {
			return err
		}
		if !fn(seq, line) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		seq++
	}
}

// readBefore reads forward from the start of a log whose end is damaged
// (damage, from readEnd), up to the first damaged line: it returns the
// error of that line, or damage, or nil if fn stopped before it.
func (c *Conversation) readBefore(ctx context.Context, e *end, damage error, fn func(int64, []byte) bool) error {
	stopped := false
	err := c.readForward(ctx, 0, 1, e, func(seq int64, ev []byte) bool {
		stopped = !fn(seq, ev)
		return !stopped
	})
	if err != nil || stopped {
		return err
	}
	return damage
}
