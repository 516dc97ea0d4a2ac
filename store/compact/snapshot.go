package compact

import (
	"bytes"
	"context"
	"fmt"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// fileSource is a source over the open events.zst, up to its size when
// init was called, reading probeSize bytes at a time into zbuf.
type fileSource struct {
	c    *Conversation
	size int64
	off  int64 // the offset of zbuf[0]
	n    int   // how many bytes of zbuf hold the file from off
}

func (s *fileSource) init() error {
	n, err := size(s.c.zf)
	s.size, s.off, s.n = n, 0, 0
	return err
}

func (s *fileSource) at(off int64, n int) ([]byte, error) {
	if off < 0 || n < 0 || off > s.size || int64(n) > s.size-off {
		return nil, errCut
	}
	if off >= s.off && off+int64(n) <= s.off+int64(s.n) {
		i := off - s.off
		return s.c.buf.zst[i : i+int64(n)], nil
	}
	k := int(min(int64(max(n, probeSize)), s.size-off))
	buf := grow(&s.c.buf.zst, k)
	s.n = 0
	if err := readAt(s.c.zf, buf, off); err != nil {
		return nil, err
	}
	s.off, s.n = off, k
	return buf[:n], nil
}

// snap is what a call saw of the conversation, under the lock.
type snap struct {
	// events.zst
	zsize     int64 // its size
	threadEnd int64 // the end of its thread frame; 0 when it has none
	end       int64 // the end of its last whole unit (or of the thread frame)
	lastUnit  unit  // that unit; zero when there is none
	framed    int64 // the last framed seq

	// the tail
	tsize int64  // its size
	tend  int64  // the end of its last complete line
	tail  []byte // its complete lines, in tbuf
	skip  int    // the bytes of lines at its start holding framed events
	count int64  // the lines after those
	tlast int64  // the seq of its last line; 0 when none is unframed

	// whole says, beside an error of damage, that the fields above hold
	// what is whole before it: the units before a damaged one, and the
	// tail's lines before a damaged one.
	whole bool
}

// last is the last seq of the conversation.
func (s *snap) last() int64 { return max(s.framed, s.tlast) }

// snapshot takes in the tail and finds the end of events.zst, holding the
// lock shared unless the caller holds it. It reports false when the
// conversation has nothing at all.
func (c *Conversation) snapshot(ctx context.Context, s *snap, locked bool) (bool, error) {
	*s = snap{}
	hasTail, err := c.openTail(locked)
	if err != nil {
		return false, err
	}
	if hasTail && !locked {
		if err := c.tf.Lock(ctx, false); err != nil {
			return false, c.lockError(err)
		}
		defer c.tf.Unlock()
	}
	hasFrames, err := c.openFrames(locked)
	if err != nil {
		return false, err
	}
	if !hasTail && !hasFrames {
		return false, nil
	}
	if hasFrames {
		if err := c.framesEnd(s); err != nil {
			return false, err
		}
	}
	if hasTail {
		if err := c.readTail(s); err != nil {
			return false, err
		}
	}
	return true, nil
}

// framesEnd finds where the whole units of events.zst end: from its seal
// when the file ends with one, else by walking it from the start.
func (c *Conversation) framesEnd(s *snap) error {
	src := &c.fsrc
	*src = fileSource{c: c}
	if err := src.init(); err != nil {
		return err
	}
	s.zsize = src.size
	if s.zsize == 0 {
		return nil
	}
	tend, _, err := readThreadFrame(src)
	if err == errCut {
		return nil // the thread frame cut short: nothing whole yet
	}
	if err != nil {
		return c.corrupt(err)
	}
	s.threadEnd, s.end = tend, tend
	if s.zsize == tend {
		return nil
	}
	if s.zsize-tend >= SealSize+9 {
		b, err := src.at(s.zsize-SealSize, SealSize)
		if err != nil {
			return err
		}
		if u, ok := parseSeal(b, s.zsize); ok && u.off >= tend {
			if m, err := src.at(u.off, 4); err == nil && bytes.Equal(m, frameMagic[:]) {
				s.end, s.lastUnit, s.framed = s.zsize, u, u.last
				return nil
			}
		}
	}
	// No seal at the end: a unit cut short follows the whole ones.
	end, err := walkUnits(src, tend, func(u unit) bool { s.lastUnit = u; return true })
	s.end, s.framed = end, s.lastUnit.last
	if err != nil {
		s.whole = true
		return c.corrupt(err)
	}
	return nil
}

var frameMagic = [4]byte{0x28, 0xB5, 0x2F, 0xFD}

// readTail reads the tail whole into tbuf and checks its complete lines
// follow the framed events.
func (c *Conversation) readTail(s *snap) error {
	n, err := size(c.tf)
	if err != nil {
		return err
	}
	if n > maxTail {
		s.whole = true
		return c.corruptTail(0, "a tail of %d bytes, more than folds ever leave", n)
	}
	buf := grow(&c.buf.tail, int(n))
	if err := readAt(c.tf, buf, 0); err != nil {
		return err
	}
	s.tsize = n
	s.tend = int64(bytes.LastIndexByte(buf, '\n') + 1)
	if n-s.tend > maxLine {
		s.whole = true
		return c.corruptTail(s.tend, "%d bytes after the last line end, more than one write makes", n-s.tend)
	}
	s.tail = buf[:s.tend]
	if err := c.tailLines(s); err != nil {
		return err
	}
	c.sawDuplicate = s.skip > 0
	if s.count == 0 && s.end < s.zsize && s.threadEnd > 0 {
		s.whole = true
		return c.cutUnit(s)
	}
	return nil
}

// tailLines checks the tail's lines follow the framed events. At a damaged
// line it cuts s.tail short before it, and says so with s.whole.
func (c *Conversation) tailLines(s *snap) (err error) {
	off := 0
	defer func() {
		if err != nil {
			s.tail, s.whole = s.tail[:off], true
		}
	}()
	want := int64(0) // the seq the next line must hold; 0 before the first
	for off < len(s.tail) {
		i := bytes.IndexByte(s.tail[off:], '\n')
		line := s.tail[off : off+i]
		if len(line) > event.MaxBytes {
			return c.corruptTail(int64(off), "a line of %d bytes, longer than any event", len(line))
		}
		seq, err := event.SeqOf(line)
		if err != nil {
			return c.corruptTail(int64(off), "not an event: %v", err)
		}
		// Append wrote valid JSON: a line that is not was changed since.
		if err := fastjson.ValidateBytes(line); err != nil {
			return c.corruptTail(int64(off), "not an event: not valid JSON: %v", err)
		}
		switch {
		case want != 0 && seq != want:
			return c.corruptTail(int64(off), "seq %d where %d was due", seq, want)
		case seq <= s.framed:
			s.skip = off + i + 1 // framed already: a fold stopped before emptying the tail
		case seq != s.framed+1 && s.tlast == 0:
			if s.end < s.zsize {
				return c.cutUnit(s)
			}
			return c.corruptTail(int64(off), "the tail goes on at seq %d, the frames end at %d", seq, s.framed)
		default:
			s.count++
			s.tlast = seq
		}
		want = seq + 1
		off += i + 1
	}
	return nil
}

// cutUnit reports a unit cut short whose events the tail does not hold: a
// fold cut short leaves them in the tail, so this unit was whole once, and
// the events framed in it are lost from here.
func (c *Conversation) cutUnit(s *snap) error {
	return &CorruptError{Path: c.frames, Offset: s.end, Problem: fmt.Sprintf("a frame cut short, %d bytes, whose events the tail does not hold: the frames end at seq %d", s.zsize-s.end, s.framed)}
}
