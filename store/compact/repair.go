package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// Repaired is what Repair did.
type Repaired struct {
	Kept int64 // the events kept: seqs 1 to Kept
	Cuts []Cut // what it moved out of the files, if anything
}

// A Cut is bytes Repair moved out of a file of the conversation's folder:
// From's bytes [Offset, Offset+Bytes), now at the end of To, beside it.
type Cut struct {
	From   string // the file's name: events.zst or events.jsonl
	Offset int64
	Bytes  int64
	To     string // the file's name they were moved to
	Why    string // the damage found at Offset, or that they were cut short by a writer that stopped
}

// Repair makes a damaged conversation usable again: it keeps the longest
// run of events from seq 1 that reads whole (the thread frame, the units
// that decompress to their seals' seqs, then the tail's lines that follow
// them) and moves everything after it beside its file: what a writer that
// stopped leaves (a unit cut short whose events the tail holds, an
// incomplete final line) to the torn files, as Append would, anything else
// to events.zst.damaged or events.jsonl.damaged, as one record like the
// torn files' whose first line also says what was found. A conversation
// that is whole is left as it is. It holds the writers' lock throughout,
// and is for a conversation no turn is writing (lnk agent chat repair,
// with the agent stopped).
//
// The bytes moved are durable beside their file before it is cut, so a
// Repair cut short loses nothing: run again, it keeps them a second time.
func (c *Conversation) Repair(ctx context.Context) (r Repaired, err error) {
	if err := ctx.Err(); err != nil {
		return Repaired{}, err
	}
	_, terr := c.fs.Stat(c.tail)
	_, ferr := c.fs.Stat(c.frames)
	if errors.Is(terr, fs.ErrNotExist) && errors.Is(ferr, fs.ErrNotExist) {
		return Repaired{}, nil // nothing to repair, and nothing to create
	}
	if err := c.lock(ctx); err != nil {
		return Repaired{}, err
	}
	c.syncs.mark = c.fs.Committer().Mark()
	defer c.unlock()

	var s snap
	frames := Cut{From: FramesName, To: DamagedFramesName}
	if ferr == nil {
		if _, err := c.openFrames(true); err != nil {
			return Repaired{}, err
		}
		if err := c.wholeFrames(&s, &frames); err != nil {
			return Repaired{}, err
		}
	}
	tail, err := c.wholeTail(&s)
	if err != nil {
		return Repaired{}, err
	}
	if frames.Bytes > 0 && frames.Why == "" {
		// A unit or a thread frame cut short: a fold or a first append
		// that stopped, if the tail holds its events.
		if s.count > 0 || s.threadEnd == 0 {
			frames.To, frames.Why = TornFramesName, "a frame cut short by a writer that stopped; the tail holds its events"
		} else {
			frames.Why = fmt.Sprintf("a frame cut short whose events the tail does not hold: the frames end at seq %d", s.framed)
		}
	}

	r.Kept = s.last()
	for _, cut := range []Cut{frames, tail} {
		if cut.Bytes == 0 {
			continue
		}
		f, path := c.zf, c.frames
		if cut.From == TailName {
			f, path = c.tf, c.tail
		}
		if err := c.keep(cut, f); err != nil {
			return r, err
		}
		if err := f.Truncate(cut.Offset); err != nil {
			return r, fmt.Errorf("compact: cut %s at offset %d: %w", path, cut.Offset, err)
		}
		if err := c.sync(f); err != nil {
			return r, err
		}
		r.Cuts = append(r.Cuts, cut)
	}
	if s.threadEnd == 0 && s.count > 0 {
		// The thread frame was cut: the tail's first line, seq 1, names
		// the thread again.
		if _, err := c.openFrames(true); err != nil {
			return r, err
		}
		s.zsize = 0
		first := s.tail[:bytes.IndexByte(s.tail, '\n')]
		if err := c.writeThread(&s, first); err != nil {
			return r, err
		}
		if err := c.syncDir(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// wholeFrames walks events.zst from the start, decompressing every unit
// and checking it holds its seal's events, and sets s to what is whole:
// the thread frame and the units before the first damaged or cut short
// one. cut gets what follows them, and why it is damaged when it is;
// a cut without a why runs past the end of the file.
func (c *Conversation) wholeFrames(s *snap, cut *Cut) error {
	src := &c.fsrc
	*src = fileSource{c: c}
	if err := src.init(); err != nil {
		return err
	}
	s.zsize = src.size
	set := func(whole int64, err error) error {
		var ce *CorruptError
		switch {
		case errors.As(c.corrupt(err), &ce):
			cut.Why = ce.Problem
		case err != nil && err != errCut:
			return err
		}
		cut.Offset, cut.Bytes = whole, s.zsize-whole
		return nil
	}
	if s.zsize == 0 {
		return nil
	}
	tend, payload, err := readThreadFrame(src)
	if err != nil {
		return set(0, err)
	}
	var t threadJSON
	if err := json.Unmarshal(payload, &t); err != nil || t.Thread == "" {
		return set(0, bad(8, "the thread frame is not {\"thread\":…}"))
	}
	s.threadEnd, s.end = tend, tend
	var derr error
	end, err := walkUnits(src, tend, func(u unit) bool {
		if _, derr = c.decode(src, u); derr != nil {
			return false
		}
		s.end, s.lastUnit, s.framed = u.end(), u, u.last
		return true
	})
	if err == nil {
		err = derr
	}
	if err == nil && end < s.zsize && end == s.end {
		err = errCut // the walk stopped at a unit cut short
	}
	return set(s.end, err)
}

// wholeTail reads the tail and sets s to its whole lines that follow the
// frames s holds, returning what comes after them: an incomplete final
// line, for the torn file, or damage.
func (c *Conversation) wholeTail(s *snap) (Cut, error) {
	n, err := size(c.tf)
	if err != nil {
		return Cut{}, err
	}
	k := min(n, maxTail)
	buf := grow(&c.buf.tail, int(k))
	if err := readAt(c.tf, buf, 0); err != nil {
		return Cut{}, err
	}
	cut := Cut{From: TailName, To: DamagedTailName}
	whole, want := 0, int64(0)
	for whole < len(buf) && cut.Why == "" {
		i := bytes.IndexByte(buf[whole:], '\n')
		if i < 0 {
			break
		}
		line := buf[whole : whole+i]
		seq, err := event.SeqOf(line)
		switch {
		case len(line) > event.MaxBytes:
			cut.Why = fmt.Sprintf("a line of %d bytes, longer than any event", len(line))
		case err != nil:
			cut.Why = fmt.Sprintf("not an event: %v", err)
		case fastjson.ValidateBytes(line) != nil:
			cut.Why = "not an event: not valid JSON"
		case want != 0 && seq != want:
			cut.Why = fmt.Sprintf("seq %d where %d was due", seq, want)
		case seq <= s.framed:
			s.skip = whole + i + 1 // a copy of a framed event
		case s.tlast == 0 && seq != s.framed+1:
			cut.Why = fmt.Sprintf("the tail goes on at seq %d, the frames end at %d", seq, s.framed)
		default:
			s.count++
			s.tlast = seq
		}
		if cut.Why == "" {
			want = seq + 1
			whole += i + 1
		}
	}
	s.tail, s.tsize, s.tend = buf[:whole], n, int64(whole)
	cut.Offset, cut.Bytes = int64(whole), n-int64(whole)
	switch {
	case cut.Why != "" || cut.Bytes == 0:
	case cut.Bytes <= maxLine:
		cut.To, cut.Why = TornTailName, "an incomplete final line"
	default:
		cut.Why = fmt.Sprintf("%d bytes after the last line end, more than one write makes", cut.Bytes)
	}
	return cut, nil
}
