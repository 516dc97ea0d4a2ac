package compact

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errCut says bytes run past the end of what was written: a unit, or the
// thread frame, cut short by a writer that stopped.
var errCut = errors.New("compact: cut short")

// source gives n bytes of events.zst from off, or errCut when the file
// ends first. What it returns is valid until its next call.
type source interface {
	at(off int64, n int) ([]byte, error)
}

// bytesSource is a source over bytes in memory: events.zst from its
// offset base.
type bytesSource struct {
	b    []byte
	base int64
}

func (s *bytesSource) at(off int64, n int) ([]byte, error) {
	i := off - s.base
	if i < 0 || n < 0 || i > int64(len(s.b)) || int64(n) > int64(len(s.b))-i {
		return nil, errCut
	}
	return s.b[i : i+int64(n)], nil
}

// formatError is what is wrong at an offset of events.zst; the
// Conversation turns it into a *CorruptError naming the file.
type formatError struct {
	off     int64
	problem string
}

func (e *formatError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.problem) }

func bad(off int64, format string, args ...any) error {
	return &formatError{off: off, problem: fmt.Sprintf(format, args...)}
}

// Block types of RFC 8878 §3.1.1.2.2.
const (
	blockRaw        = 0
	blockRLE        = 1
	blockCompressed = 2
	blockMax        = 128 << 10 // Block_Maximum_Size's ceiling
)

// walkFrame walks the data frame at off by its headers and returns its
// length in bytes and its content size. It reads the frame header and each
// block's header, skipping the blocks' bodies.
func walkFrame(s source, off int64) (n int64, content int64, err error) {
	h, err := s.at(off, 5)
	if err != nil {
		return 0, 0, err
	}
	if m := binary.LittleEndian.Uint32(h); m != FrameMagic {
		return 0, 0, bad(off, "magic %#08x where a data frame was due", m)
	}
	fhd := h[4]
	fcsFlag, single, checksum, dictFlag := fhd>>6, fhd&0x20 != 0, fhd&0x04 != 0, fhd&0x03
	if fhd&0x08 != 0 {
		return 0, 0, bad(off, "a frame header's reserved bit is set")
	}
	if dictFlag != 0 {
		return 0, 0, bad(off, "a frame names a dictionary")
	}
	fcsLen := [4]int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsLen = 1
	}
	if fcsLen == 0 {
		return 0, 0, bad(off, "a frame without its content size")
	}
	hlen := 5 + fcsLen
	if !single {
		hlen++
	}
	h, err = s.at(off, hlen)
	if err != nil {
		return 0, 0, err
	}
	fcs := h[hlen-fcsLen:]
	switch fcsLen {
	case 1:
		content = int64(fcs[0])
	case 2:
		content = int64(binary.LittleEndian.Uint16(fcs)) + 256
	case 4:
		content = int64(binary.LittleEndian.Uint32(fcs))
	case 8:
		u := binary.LittleEndian.Uint64(fcs)
		if u > MaxFrameContent {
			return 0, 0, bad(off, "a frame of %d bytes, more than any fold makes", u)
		}
		content = int64(u)
	}
	if content > MaxFrameContent {
		return 0, 0, bad(off, "a frame of %d bytes, more than any fold makes", content)
	}
	p := off + int64(hlen)
	for {
		b, err := s.at(p, 3)
		if err != nil {
			return 0, 0, err
		}
		bh := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		last, typ, size := bh&1 != 0, (bh>>1)&3, int64(bh>>3)
		switch typ {
		case blockRLE:
			if size > blockMax {
				return 0, 0, bad(p, "a block of %d bytes, over the most a block holds", size)
			}
			size = 1
		case blockRaw, blockCompressed:
			if size > blockMax {
				return 0, 0, bad(p, "a block of %d bytes, over the most a block holds", size)
			}
		default:
			return 0, 0, bad(p, "a block of the reserved type")
		}
		p += 3 + size
		if p-off > MaxFrameContent+MaxFrameContent/8+1<<10 {
			return 0, 0, bad(off, "a frame longer than any fold makes")
		}
		if last {
			break
		}
	}
	if checksum {
		p += 4
	}
	// The last block's body and the checksum must be there too.
	if p > off {
		if _, err := s.at(p-1, 1); err != nil {
			return 0, 0, err
		}
	}
	return p - off, content, nil
}

// unit is a data frame and its seal: events first()…last.
type unit struct {
	off   int64 // the data frame's offset
	n     int64 // the data frame's length
	count int64 // how many events it holds
	last  int64 // the seq of its last event
}

func (u unit) end() int64   { return u.off + u.n + SealSize }
func (u unit) first() int64 { return u.last - u.count + 1 }

// appendSeal appends the seal of a data frame of n bytes holding count
// events, the last of them seq last.
func appendSeal(dst []byte, n, count int, last int64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, SealMagic)
	dst = binary.LittleEndian.AppendUint32(dst, SealSize-8)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(count))
	return binary.LittleEndian.AppendUint64(dst, uint64(last))
}

// parseSeal reads the seal in b, which ends at end, and returns its unit;
// ok is false if b is not a seal.
func parseSeal(b []byte, end int64) (u unit, ok bool) {
	if len(b) != SealSize || binary.LittleEndian.Uint32(b) != SealMagic || binary.LittleEndian.Uint32(b[4:]) != SealSize-8 {
		return unit{}, false
	}
	n := int64(binary.LittleEndian.Uint32(b[8:]))
	count := int64(binary.LittleEndian.Uint32(b[12:]))
	last := binary.LittleEndian.Uint64(b[16:])
	if n < 9 || count < 1 || count > MaxFrameContent || last > 1<<62 || int64(last) < count {
		return unit{}, false
	}
	return unit{off: end - SealSize - n, n: n, count: count, last: int64(last)}, true
}

// appendThreadFrame appends the thread frame naming thread.
func appendThreadFrame(dst []byte, thread string) []byte {
	payload := appendThreadJSON(nil, thread)
	dst = binary.LittleEndian.AppendUint32(dst, ThreadMagic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// readThreadFrame reads the thread frame at the start of s and returns
// where it ends and its payload.
func readThreadFrame(s source) (end int64, payload []byte, err error) {
	h, err := s.at(0, 8)
	if err != nil {
		return 0, nil, err
	}
	if m := binary.LittleEndian.Uint32(h); m != ThreadMagic {
		return 0, nil, bad(0, "magic %#08x where the thread frame was due", m)
	}
	n := binary.LittleEndian.Uint32(h[4:])
	if n > MaxThreadFrame {
		return 0, nil, bad(0, "a thread frame of %d bytes, over the limit of %d", n, MaxThreadFrame)
	}
	payload, err = s.at(8, int(n))
	if err != nil {
		return 0, nil, err
	}
	return 8 + int64(n), payload, nil
}

// walkUnits walks the units from off, the thread frame's end, by their
// headers, calling fn for each whole one; it returns where the whole ones
// end. A unit cut short ends the walk without an error.
func walkUnits(s source, off int64, fn func(unit) bool) (int64, error) {
	next := int64(1)
	for {
		if _, err := s.at(off, 1); err == errCut {
			return off, nil // a clean end
		}
		n, _, err := walkFrame(s, off)
		if err == errCut {
			return off, nil
		}
		if err != nil {
			return off, err
		}
		b, err := s.at(off+n, SealSize)
		if err == errCut {
			return off, nil
		}
		if err != nil {
			return off, err
		}
		u, ok := parseSeal(b, off+n+SealSize)
		if !ok || u.n != n {
			return off, bad(off+n, "no seal after the data frame at offset %d", off)
		}
		if u.first() != next {
			return off, bad(off, "a frame of seqs %d to %d where %d was due", u.first(), u.last, next)
		}
		next = u.last + 1
		if !fn(u) {
			return u.end(), nil
		}
		off = u.end()
	}
}
