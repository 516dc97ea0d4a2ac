package model

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
)

// maxLine is the longest line, and the largest event's data, a stream may
// send. Past it the stream is malformed: nothing a provider sends comes
// near, and the reader must not grow without bound for a broken one.
const maxLine = 1 << 20

// sseReader reads a server-sent event stream's data fields, one event at a
// time. It keeps the fields the providers leave out of their JSON (event,
// id, retry) out of its answer: each provider also names the event inside
// its data. Not safe for concurrent use.
type sseReader struct {
	r    *bufio.Reader
	line []byte // a line longer than r's buffer, put together
	data []byte // the current event's data
}

// next returns the next event's data, valid until the following call. A
// clean end between events is io.EOF; an end inside a line is
// io.ErrUnexpectedEOF.
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && has {
				return s.data, nil // the last event, without its blank line
			}
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment, as a keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if has {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > maxLine {
			return nil, overLine("an event")
		}
		s.data = append(s.data, value...)
		has = true
	}
}

// readLine returns the next line without its end (\n or \r\n), valid until
// the next read.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == nil {
		return trimEOL(line), nil
	}
	if err != bufio.ErrBufferFull {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return s.longLine(line)
}

// longLine puts together in s.line a line longer than the reader's buffer,
// first its start. It and overLine are functions of their own: readLine
// and next are under a turn's every wait for its stream.
//
//go:noinline
func (s *sseReader) longLine(first []byte) ([]byte, error) {
	s.line = append(s.line[:0], first...)
	for {
		line, err := s.r.ReadSlice('\n')
		if len(s.line)+len(line) > maxLine {
			return nil, overLine("a line")
		}
		s.line = append(s.line, line...)
		switch err {
		case nil:
			return trimEOL(s.line), nil
		case bufio.ErrBufferFull:
		case io.EOF:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// readers holds stream readers, each with a buffer of sseBuf bytes and the
// scratch its longest lines needed, so a call allocates none of them.
var readers = sync.Pool{New: func() any { return &sseReader{r: bufio.NewReaderSize(nil, sseBuf)} }}

// sseBuf is a stream reader's buffer: a turn holds it while its answer
// streams, which may take minutes. It is small: the stream comes through
// the connection's own buffer (8 KiB), so a larger one saves no read of
// the connection, and a line longer than it is put together in the
// reader's scratch.
const sseBuf = 4 << 10

// readStream hands decode the event stream r holds, read through a pooled
// reader. Its frame is under a turn's every wait for its stream, so the
// pool's work is in functions of their own.
func readStream(r io.Reader, decode func(*sseReader) error) error {
	s := takeReader(r)
	err := decode(s)
	giveReader(s)
	return err
}

// takeReader is a pooled stream reader of r.
//
//go:noinline
func takeReader(r io.Reader) *sseReader {
	s := readers.Get().(*sseReader)
	s.r.Reset(r)
	return s
}

// giveReader puts s back in the pool, reading nothing.
//
//go:noinline
func giveReader(s *sseReader) {
	s.r.Reset(nil)
	if cap(s.line) > 64<<10 || cap(s.data) > 64<<10 {
		s.line, s.data = nil, nil // a rare long line is not kept for every call after
	}
	readers.Put(s)
}

// overLine is the error of what, a line or an event, over maxLine.
//
//go:noinline
func overLine(what string) error {
	return fmt.Errorf("%w: %s over %d bytes", ErrMalformed, what, maxLine)
}
