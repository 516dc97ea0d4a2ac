package model

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
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
			return nil, fmt.Errorf("%w: an event over %d bytes", ErrMalformed, maxLine)
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
	s.line = append(s.line[:0], line...)
	for {
		line, err = s.r.ReadSlice('\n')
		if len(s.line)+len(line) > maxLine {
			return nil, fmt.Errorf("%w: a line over %d bytes", ErrMalformed, maxLine)
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

// readers holds stream readers, each with a 64 KiB buffer and the scratch
// its longest lines needed, so a call allocates none of them.
var readers = sync.Pool{New: func() any { return &sseReader{r: bufio.NewReaderSize(nil, 64<<10)} }}

// readStream hands decode the event stream r holds, read through a pooled
// reader.
func readStream(r io.Reader, decode func(*sseReader) error) error {
	s := readers.Get().(*sseReader)
	s.r.Reset(r)
	err := decode(s)
	s.r.Reset(nil)
	if cap(s.line) > 64<<10 || cap(s.data) > 64<<10 {
		s.line, s.data = nil, nil // a rare long line is not kept for every call after
	}
	readers.Put(s)
	return err
}

// stallReader pushes back its timer on every byte read; the timer, when it
// fires, ends the request as stalled.
type stallReader struct {
	r     io.Reader
	timer *time.Timer
	stall time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.stall)
	}
	return n, err
}

// post is one streamed call over HTTP, the part both formats share.
type post struct {
	provider string
	hc       *http.Client
	url      string
	body     []byte
	header   http.Header
	stall    time.Duration
	timeout  time.Duration // the whole call's; 0 means DefaultTimeout
}

// do sends the request and hands its event stream to decode, which returns
// once the provider says the answer is complete. It returns the time from
// the request's start to then.
func (p *post) do(ctx context.Context, decode func(*sseReader) error) (time.Duration, error) {
	start := time.Now()
	stall := p.stall
	if stall <= 0 {
		stall = DefaultStall
	}
	timeout := p.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(stall, func() { cancel(ErrStalled) })
	defer timer.Stop()

	// The body's bytes are used again by a later call once the transport
	// closed every reader of them.
	body := &sent{b: p.body}
	defer body.release()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, body.reader())
	if err != nil {
		return 0, fmt.Errorf("model: %s: %w", p.provider, err)
	}
	req.ContentLength = int64(len(p.body))
	req.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
	req.Header = p.header
	resp, err := p.hc.Do(req)
	if err != nil {
		switch context.Cause(ctx) {
		case ErrStalled:
			return 0, fmt.Errorf("model: %s: %w: no response in %v", p.provider, ErrStalled, stall)
		case ErrTimeout:
			return 0, fmt.Errorf("model: %s: %w: no answer in %v", p.provider, ErrTimeout, timeout)
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("model: %s: %w", p.provider, context.Cause(ctx))
		}
		if ctx.Err() == nil {
			return 0, fmt.Errorf("model: %s: %w: %w", p.provider, ErrUnreachable, err)
		}
		return 0, fmt.Errorf("model: %s: %w", p.provider, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, statusError(p.provider, resp)
	}

	err = readStream(&stallReader{r: resp.Body, timer: timer, stall: stall}, decode)
	latency := time.Since(start)
	if err == nil {
		// Read the little left (the chunked body's end) so the connection
		// can be used again.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return latency, nil
	}
	switch {
	case context.Cause(ctx) == ErrStalled:
		return latency, fmt.Errorf("model: %s: %w: no byte for %v", p.provider, ErrStalled, stall)
	case context.Cause(ctx) == ErrTimeout:
		return latency, fmt.Errorf("model: %s: %w: the answer was not over in %v", p.provider, ErrTimeout, timeout)
	case ctx.Err() != nil:
		return latency, fmt.Errorf("model: %s: %w", p.provider, context.Cause(ctx))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return latency, fmt.Errorf("model: %s: %w: the stream ended before the answer did", p.provider, ErrCut)
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrCut), errors.Is(err, ErrTooLarge):
		return latency, fmt.Errorf("model: %s: %w", p.provider, err)
	}
	var se *StatusError
	if errors.As(err, &se) {
		return latency, err
	}
	return latency, fmt.Errorf("model: %s: %w: %v", p.provider, ErrCut, err)
}
