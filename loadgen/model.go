package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
)

// tokenMark starts a message's token in its text, as send writes it.
var tokenMark = []byte("Message lg-")

// maxModelBody bounds a request body the model reads.
const maxModelBody = 32 << 20

// startModel serves the scripted model on a free loopback port.
func startModel(script *scripted.Script) (*model, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loadgen: the scripted model: %w", err)
	}
	m := &model{url: "http://" + ln.Addr().String(), times: map[string]float64{}}
	inner := scripted.New(script)
	m.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxModelBody))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			start := time.Now()
			inner.ServeHTTP(w, r)
			if tok := lastToken(body); tok != "" {
				m.mu.Lock()
				m.times[tok] += time.Since(start).Seconds()
				m.mu.Unlock()
			}
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go m.srv.Serve(ln)
	return m, nil
}

// lastToken returns the token of the last message in a request body
// ("lg-agent-3-2-7"), or "".
func lastToken(body []byte) string {
	i := bytes.LastIndex(body, tokenMark)
	if i < 0 {
		return ""
	}
	t := body[i+len(tokenMark)-len("lg-"):]
	end := bytes.IndexByte(t, ':')
	if end < 0 || end > 64 {
		return ""
	}
	return string(t[:end])
}

func (m *model) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		m.srv.Close()
	}
}

// model is the scripted model in this process, timing each message's
// requests by the token in its text.
type model struct {
	url string
	srv *http.Server

	mu    sync.Mutex
	times map[string]float64 // token → seconds over its requests
}

// took returns, and forgets, the model's time for the message of token.
func (m *model) took(token string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.times[token]
	delete(m.times, token)
	return d
}
