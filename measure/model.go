package measure

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
)

// model is the scripted model served in measure's own process on
// loopback, counting what the harnesses ask of it.
type model struct {
	URL string // http://127.0.0.1:PORT, for LNK_MODEL_PROXY
	srv *http.Server

	mu sync.Mutex
	// What every request to it came to, since it started.
	use modelUse
}

// modelUse counts requests to the model, and their bodies' bytes.
type modelUse struct {
	Requests     int64
	RequestBytes int64
	MaxBytes     int64
	Seconds      float64 // the model server's own time answering
}

func (u modelUse) minus(o modelUse) modelUse {
	return modelUse{
		Requests:     u.Requests - o.Requests,
		RequestBytes: u.RequestBytes - o.RequestBytes,
		MaxBytes:     u.MaxBytes, // the largest since begin, not a difference
		Seconds:      u.Seconds - o.Seconds,
	}
}

// startModel serves the scripted model with script (nil for its default,
// answering every message at once) on a free loopback port.
func startModel(script *scripted.Script) (*model, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("measure: the scripted model: %w", err)
	}
	m := &model{URL: "http://" + ln.Addr().String()}
	inner := scripted.New(script)
	m.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			n := r.ContentLength
			inner.ServeHTTP(w, r)
			m.count(n, time.Since(start))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go m.srv.Serve(ln)
	return m, nil
}

func (m *model) count(bytes int64, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.use.Requests++
	if bytes > 0 {
		m.use.RequestBytes += bytes
		m.use.MaxBytes = max(m.use.MaxBytes, bytes)
	}
	m.use.Seconds += d.Seconds()
}

// begin starts counting the largest request anew, for a case's measured
// messages, and returns the counts so far.
func (m *model) begin() modelUse {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.use.MaxBytes = 0
	return m.use
}

func (m *model) snapshot() modelUse {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.use
}

// close stops the model at once: by then no harness is left asking it.
func (m *model) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		m.srv.Close()
	}
}
