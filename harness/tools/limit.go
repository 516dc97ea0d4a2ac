package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
)

// MaxAnswerBytes is the most a tool server may send as one message: one
// JSON body, or one event of a stream (a stream's events are counted each
// on its own, since a kept session's stream lasts as long as it). The MCP
// client reads a message whole before anything of it is kept, so past this
// the message is not read on and the call is answered with an error; of a
// text answer only MaxResultBytes would have been kept anyway.
const MaxAnswerBytes = 4 << 20

// ErrAnswerTooLarge comes when a tool server sent a message over
// MaxAnswerBytes.
var ErrAnswerTooLarge = errors.New("tools: answer too large")

// limited returns a client like hc (nil: a client of its own) whose
// response bodies are read through a limit of MaxAnswerBytes a message.
func limited(hc *http.Client) *http.Client {
	c := &http.Client{}
	if hc != nil {
		*c = *hc
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = limitTransport{base: base, most: MaxAnswerBytes}
	return c
}

// limitTransport wraps each response's body in a limitBody.
type limitTransport struct {
	base http.RoundTripper
	most int
}

func (l limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	tripped, _ := req.Context().Value(trippedKey{}).(*atomic.Bool)
	resp.Body = &limitBody{rc: resp.Body, most: l.most, events: mt == "text/event-stream", tripped: tripped}
	return resp, nil
}

// trippedKey is the context key of the flag a limitBody sets when a
// message was over the limit, so the call that read it can say why it
// failed whatever the MCP client made of the error.
type trippedKey struct{}

// withTripped returns ctx carrying a flag set when a response read under
// it was over the limit.
func withTripped(ctx context.Context) (context.Context, *atomic.Bool) {
	f := new(atomic.Bool)
	return context.WithValue(ctx, trippedKey{}, f), f
}

// limitBody is a response body that fails with ErrAnswerTooLarge once a
// message in it is over most bytes: the whole body, or, for an event
// stream, one event (bytes since the last blank line). Not safe for
// concurrent use, as a body.
type limitBody struct {
	rc      io.ReadCloser
	most    int
	events  bool
	tripped *atomic.Bool // may be nil

	n       int // bytes of the current message
	lineLen int // bytes of the current line, for an event stream
	err     error
}

func (b *limitBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if !b.events {
		b.n += n
	} else {
		for _, c := range p[:n] {
			b.n++
			switch c {
			case '\n':
				if b.lineLen == 0 {
					b.n = 0 // a blank line ends the event
				}
				b.lineLen = 0
			case '\r':
			default:
				b.lineLen++
			}
		}
	}
	if b.n > b.most {
		b.err = fmt.Errorf("%w: a message over %d bytes", ErrAnswerTooLarge, b.most)
		if b.tripped != nil {
			b.tripped.Store(true)
		}
		return 0, b.err
	}
	return n, err
}

func (b *limitBody) Close() error { return b.rc.Close() }
