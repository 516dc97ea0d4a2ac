package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
)

// guard bounds a test's call in case the bound under test fails, far past
// the bound itself.
const guard = 20 * time.Second

// TestTimeoutBoundsBytes: a stream that keeps sending bytes, keep-alives or
// a trickle of the answer, keeps the stall timer from firing, and is ended
// by the whole call's timeout, an error that says so.
func TestTimeoutBoundsBytes(t *testing.T) {
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "ping", Text: "an answer that never comes", Chunks: 4, Stall: true, AfterChunks: 1, PingMS: 10},
		{Match: "trickle", Text: "an answer a byte at a time", AnswerBytes: 4000, TrickleMS: 5},
	}})
	for _, provider := range providers {
		for _, text := range []string{"ping", "trickle"} {
			t.Run(provider+"/"+text, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), guard)
				defer cancel()
				req := &Request{Model: "m", Messages: []Message{{Role: "user", Text: text}},
					Stall: 500 * time.Millisecond, Timeout: time.Second}
				resp, err := client(t, provider, base).Call(ctx, req, nil)
				if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrStalled) {
					t.Fatalf("answer %+v, error %v; want %v", resp, err, ErrTimeout)
				}
				if !strings.Contains(err.Error(), provider) || !strings.Contains(err.Error(), "1s") {
					t.Errorf("error %q does not say the provider and the timeout", err)
				}
			})
		}
	}
}

// hugeAnswer is a real HTTP server streaming an answer of size bytes in
// provider's format, from one event written again and again, so the server
// itself allocates next to nothing.
func hugeAnswer(t *testing.T, size int) string {
	piece := strings.Repeat("word ", 64<<10/5)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var head, ev []byte
		switch {
		case strings.HasSuffix(r.URL.Path, "/v1/messages"):
			head = []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"m\",\"usage\":{}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			ev = []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + piece + "\"}}\n\n")
		case strings.HasSuffix(r.URL.Path, "/api/chat"):
			ev = []byte(`{"model":"m","message":{"role":"assistant","content":"` + piece + "\"},\"done\":false}\n")
		default:
			ev = []byte(`data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"` + piece + "\"}}]}\n\n")
		}
		_, _ = w.Write(head)
		for sent := 0; sent < size; sent += len(piece) {
			if _, err := w.Write(ev); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLargeAnswerBounded: an answer far larger than can be kept is ended
// once past MaxAnswerBytes, with ErrTooLarge, having allocated a bounded
// amount, whatever the stream's size.
func TestLargeAnswerBounded(t *testing.T) {
	const size, bound = 50 << 20, 64 << 20
	base := hugeAnswer(t, size)
	for _, provider := range []string{"anthropic", "openai", "ollama"} {
		t.Run(provider, func(t *testing.T) {
			c := client(t, provider, base)
			req := &Request{Model: "m", Messages: []Message{{Role: "user", Text: "huge"}}}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, err := c.Call(context.Background(), req, nil)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				n := 0
				if resp != nil {
					n = len(resp.Text)
				}
				t.Errorf("an answer of %d bytes: %d bytes of text, error %v; want %v", size, n, err, ErrTooLarge)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > bound {
				t.Errorf("the call allocated %d MB, over %d MB", got>>20, bound>>20)
			}
		})
	}
}

// TestAnswerRoomCounts: each kind of answer byte is counted against the
// room, and an answer within it is whole.
func TestAnswerRoomCounts(t *testing.T) {
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "text", AnswerBytes: 1000, Chunks: 10},
		{Match: "think", Text: "ok", Thinking: strings.Repeat("t", 1000), Chunks: 10},
		{Match: "call", Text: "ok", Calls: []scripted.Call{{Name: "a__b", Args: `{"x":"` + strings.Repeat("a", 1000) + `"}`}}, Chunks: 10},
	}})
	for _, provider := range providers {
		for _, text := range []string{"text", "think", "call"} {
			if text == "think" && provider == "openai" {
				continue // Chat Completions has no place for thinking
			}
			c := client(t, provider, base)
			req := &Request{Model: "m", Messages: []Message{{Role: "user", Text: text}}, MaxAnswerBytes: 500}
			if _, err := c.Call(context.Background(), req, nil); !errors.Is(err, ErrTooLarge) {
				t.Errorf("%s/%s: error %v, want %v", provider, text, err, ErrTooLarge)
			}
			req.MaxAnswerBytes = 4000
			resp, err := c.Call(context.Background(), req, nil)
			if err != nil {
				t.Fatalf("%s/%s within the room: %v", provider, text, err)
			}
			if whole := map[string]bool{"text": len(resp.Text) == 1000, "think": len(resp.Thinking) > 1000, "call": len(resp.Calls) == 1 && len(resp.Calls[0].Args) > 1000}; !whole[text] {
				t.Errorf("%s/%s within the room, not whole: %+v", provider, text, resp)
			}
		}
	}
}

// pingTransport answers every request with a stream that opens an
// Anthropic message and then sends only keep-alives, every apart, until the
// request's context ends.
type pingTransport struct{ apart time.Duration }

func (p pingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		pw.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"m\",\"usage\":{}}}\n\n"))
		for {
			select {
			case <-req.Context().Done():
				return
			case <-time.After(p.apart): // the keep-alives under test, in the bubble's fake time
				pw.Write([]byte(": keep-alive\n\n"))
			}
		}
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// With the defaults, keep-alives every 30 s (inside the stall time) hold a
// call for exactly DefaultTimeout, in fake time.
func TestDefaultTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Anthropic{Base: "http://model.invalid", HTTP: &http.Client{Transport: pingTransport{apart: 30 * time.Second}}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // a bound if the timeout fails
		defer cancel()
		start := time.Now()
		_, err := c.Call(ctx, &Request{Model: "m", Messages: []Message{{Role: "user", Text: "hi"}}}, nil)
		if took := time.Since(start); !errors.Is(err, ErrTimeout) || took != DefaultTimeout {
			t.Errorf("after %v: %v; want %v after %v", took, err, ErrTimeout, DefaultTimeout)
		}
	})
}
