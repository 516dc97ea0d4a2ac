package h1

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// body is an answer's body read from its connection: its end gives the
// connection back to the pool, closing it before its end closes the
// connection. Read and Close may be called from different goroutines.
type body struct {
	rc   io.ReadCloser // http.ReadResponse's body over c's reader
	ctx  context.Context
	stop func() bool // stops the context's abort
	keep bool        // neither side said Connection: close

	// mu guards c and closed.
	mu     sync.Mutex
	c      *conn // nil once the body has ended
	closed bool
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	c, closed := b.c, b.closed
	b.mu.Unlock()
	if closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if c == nil {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	return n, b.ended(err)
}

// ended ends the body with the error its read met, and says how to tell
// it. A function of its own: Read is under a turn's every wait for its
// model's stream.
//
//go:noinline
func (b *body) ended(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == io.EOF:
	case b.ctx.Err() != nil:
		err = fmt.Errorf("h1: reading the response: %w", b.ctx.Err())
		if cause := context.Cause(b.ctx); cause != b.ctx.Err() {
			err = fmt.Errorf("h1: reading the response: %w (%w)", b.ctx.Err(), cause)
		}
	default:
		err = fmt.Errorf("h1: reading the response: %w", err)
	}
	if b.c != nil {
		b.end(err == io.EOF)
	}
	return err
}

// Close ends the body; before its end it closes the connection.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.c != nil {
		b.end(false)
	}
	return nil
}

// end lets go of the connection: back to the pool when the answer was
// read whole (done), nothing says close, nothing more was sent and the
// context has not closed it; closed otherwise.
func (b *body) end(done bool) {
	c := b.c
	b.c = nil
	if !b.stop() || !done || !b.keep || c.br.Buffered() != 0 {
		c.close()
		return
	}
	c.br.Reset(nil)
	readers.Put(c.br)
	c.br = nil
	c.reused = false
	c.t.putIdle(c)
}
