package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// httpClient is hc, or http.DefaultClient when nil.
func httpClient(hc *http.Client) *http.Client {
	if hc == nil {
		return http.DefaultClient
	}
	return hc
}

// roundTrip sends req through hc's transport itself where hc adds nothing
// a model call uses (a timeout, cookies, a redirect policy; a call to the
// model proxy is never redirected): http.Client's own layer allocates and
// deepens the stack of a turn waiting for its model. Else through hc.
func roundTrip(hc *http.Client, req *http.Request) (*http.Response, error) {
	if hc.Transport != nil && hc.Timeout == 0 && hc.Jar == nil && hc.CheckRedirect == nil {
		resp, err := hc.Transport.RoundTrip(req)
		if err != nil {
			return nil, &url.Error{Op: urlOp, URL: req.URL.Redacted(), Err: err}
		}
		return resp, nil
	}
	return hc.Do(req)
}

// urlOp is how http.Client names a POST in its errors, kept so an error
// reads the same whichever way the request went.
const urlOp = "Post"

// jsonHeader is the header of a request whose body is JSON and which asks
// for accept, made with room for the two more a provider's call adds at
// most (Anthropic's version and key).
func jsonHeader(accept string) http.Header {
	h := make(http.Header, 4)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", accept)
	return h
}

// bearerHeader is the header of a request whose body is JSON, which asks for
// accept and sends key, when there is one, as a bearer token.
func bearerHeader(accept, key string) http.Header {
	h := jsonHeader(accept)
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

// stallReader pushes back its timer on every byte read, never past the
// whole call's deadline; the timer, when it fires, ends the request as
// stalled, or as out of time past the deadline.
type stallReader struct {
	r        io.Reader
	timer    *time.Timer
	stall    time.Duration
	deadline time.Time
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(min(s.stall, time.Until(s.deadline)))
	}
	return n, err
}

// post is one streamed call over HTTP, the part every format shares.
type post struct {
	provider string
	hc       *http.Client
	url      *url.URL                         // shared by the client's calls, as header is
	body     []byte                           // the request's body
	again    func(dst []byte) ([]byte, error) // makes body again, appended to dst
	header   http.Header
	stall    time.Duration
	timeout  time.Duration // the whole call's; 0 means DefaultTimeout

	// Set by send for the call's time, let go of by end.
	start  time.Time
	ctx    context.Context // the call's: canceled by its timer, or once it ends
	cancel context.CancelCauseFunc
	read   stallReader // the response's body, its timer pushed back by every byte
	sent   *sent       // the request's body
}

// do sends the request and hands its event stream to decode, which returns
// once the provider says the answer is complete. It returns the time from
// the request's start to then. Its frame is on the stack of a turn waiting
// on its stream, so what sends the request (send) and words its errors is
// in functions of their own, gone while it waits, and what the call holds
// meanwhile is in p, not in the frame (see package apart).
func (p *post) do(ctx context.Context, decode func(*sseReader) error) (time.Duration, error) {
	resp, err := p.send(ctx)
	defer p.end()
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, statusError(p.provider, resp)
	}
	p.read.r = resp.Body
	err = readStream(&p.read, decode)
	latency := time.Since(p.start)
	if err == nil {
		drain(resp.Body)
		return latency, nil
	}
	return latency, p.streamError(err)
}

// send sends the request, with the call's context and its one timer, which
// ends the call at the stall (pushed back by every byte read) or at the
// whole call's time, whichever comes first: no timeout context of its own
// beside the call's, which a turn waiting on its model would hold with its
// timer and its place among its parent's children. end lets go of what it
// made.
func (p *post) send(ctx context.Context) (*http.Response, error) {
	p.start = time.Now()
	if p.stall <= 0 {
		p.stall = DefaultStall
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	deadline := p.start.Add(p.timeout)
	cancel := p.cancel
	p.read = stallReader{stall: p.stall, deadline: deadline}
	p.read.timer = time.AfterFunc(min(p.stall, p.timeout), func() {
		if time.Now().Before(deadline) {
			cancel(ErrStalled)
		} else {
			cancel(ErrTimeout)
		}
	})
	p.sent = &sent{b: p.body, size: len(p.body), again: p.again}
	p.body = nil // given back once written (see sent)
	req, err := p.request(p.ctx, p.sent)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", p.provider, err)
	}
	resp, err := roundTrip(p.hc, req)
	if err != nil {
		return nil, p.sendError(err)
	}
	return resp, nil
}

// end lets go of what send made: the call's context, its timer and the
// request's body, none of them held by the answer the call made.
func (p *post) end() {
	if p.cancel != nil {
		p.cancel(nil)
	}
	if p.read.timer != nil {
		p.read.timer.Stop()
	}
	if p.sent != nil {
		p.sent.release()
	}
	p.ctx, p.cancel, p.read, p.sent = nil, nil, stallReader{}, nil
}

// drain reads the little left of a stream whose answer is complete (the
// chunked body's end) so its connection can be used again.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
}

// request is the request that sends body, to the client's URL with its
// header, both shared by its calls: no URL parsed, no header made a call.
func (p *post) request(ctx context.Context, body *sent) (*http.Request, error) {
	first, err := body.reader()
	if err != nil {
		return nil, err
	}
	req := http.Request{Method: http.MethodPost, URL: p.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: p.header, Body: first, GetBody: body.reader, ContentLength: int64(body.size), Host: p.url.Host}
	return req.WithContext(ctx), nil
}

// sendError says why a request had no response.
func (p *post) sendError(err error) error {
	ctx := p.ctx
	switch context.Cause(ctx) {
	case ErrStalled:
		return fmt.Errorf("model: %s: %w: no response in %v", p.provider, ErrStalled, p.stall)
	case ErrTimeout:
		return fmt.Errorf("model: %s: %w: no answer in %v", p.provider, ErrTimeout, p.timeout)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("model: %s: %w", p.provider, context.Cause(ctx))
	}
	return fmt.Errorf("model: %s: %w: %w", p.provider, ErrUnreachable, err)
}

// streamError says why a response's stream ended before its answer did.
func (p *post) streamError(err error) error {
	ctx := p.ctx
	switch {
	case context.Cause(ctx) == ErrStalled:
		return fmt.Errorf("model: %s: %w: no byte for %v", p.provider, ErrStalled, p.stall)
	case context.Cause(ctx) == ErrTimeout:
		return fmt.Errorf("model: %s: %w: the answer was not over in %v", p.provider, ErrTimeout, p.timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("model: %s: %w", p.provider, context.Cause(ctx))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("model: %s: %w: the stream ended before the answer did", p.provider, ErrCut)
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrCut), errors.Is(err, ErrTooLarge):
		return fmt.Errorf("model: %s: %w", p.provider, err)
	}
	var se *StatusError
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("model: %s: %w: %v", p.provider, ErrCut, err)
}

// ask sends a's request, a.post, and hands its event stream to decode,
// which builds a, and returns a's response with the call's latency.
func (a *answer) ask(ctx context.Context, decode func(*sseReader) error) (*Response, error) {
	latency, err := a.post.do(ctx, decode)
	if err != nil {
		return nil, err
	}
	a.resp.Latency = latency
	return &a.resp, nil
}
