package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// running is one agent served: its unit, its listener, and, while it is
// awake, what it holds. Asleep, it holds its listener alone: its
// runner, tool sessions, connections, drivers and home's lock are let go
// of, and made again by the first request that comes. It is safe for
// concurrent use.
type running struct {
	f     *fleet
	unit  Unit
	name  string
	ln    *pausable
	inner http.Handler // the server's handler of the agent's address

	dueIndex int // its place among the dozer's sleeps coming, -1 when none is; guarded by f.dozer.mu

	leaving atomic.Bool // it leaves: its connections close once idle, and a new one at once
	// guarded by f.conns.mu
	conns   int           // its connections open
	drained chan struct{} // closed when its last connection closes, while it leaves

	mu sync.Mutex
	// guarded by mu
	held     io.Closer // what the agent holds awake; nil asleep
	inflight int       // requests being answered
	gen      int       // the sleep timer armed last; an earlier one does nothing
	stopped  bool      // it left: it never wakes again
	stale    bool      // its entry changed while it was busy: it sleeps once idle, to wake as the new one
}

// ServeHTTP answers a request to the agent's address, waking the agent
// first if it sleeps; /healthz and /readyz wake no one.
func (r *running) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/healthz" || req.URL.Path == "/readyz" {
		r.inner.ServeHTTP(w, req)
		return
	}
	if err := r.wake(); err != nil {
		r.notWoken(w, err)
		return
	}
	defer r.rest()
	if r.leaving.Load() {
		w.Header().Set("Connection", "close") // its connection ends with this answer
	}
	r.inner.ServeHTTP(w, req)
}

// notWoken answers a request to an agent that could not wake: 503 with
// Retry-After, logged. A function of its own, so its frame is not on the
// stack of every turn, which runs under ServeHTTP.
func (r *running) notWoken(w http.ResponseWriter, err error) {
	r.f.Log.Error("agent not woken", "agent", r.name, "error", err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{fmt.Sprintf("agent %s could not wake: %v", r.name, err)})
	w.Write(append(b, '\n'))
}

// wake counts a request in, making the agent again if it sleeps. An error
// leaves it asleep and the request not counted.
func (r *running) wake() error {
	woke, err := r.rise()
	if woke {
		// After it is awake, so the collector is never left quiet: quiet
		// starts only while every agent sleeps.
		r.f.quiet.stop()
	}
	return err
}

// rise is wake's part under r.mu: whether it made the agent again.
func (r *running) rise() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disarm()
	woke := false
	if r.held == nil && !r.stopped {
		a, held, err := r.unit.agent(&r.f.Shared, r.f.ending)
		if err != nil {
			return false, err
		}
		if err := r.f.srv.Add(a); err != nil {
			held.Close()
			return false, err
		}
		r.held, woke = held, true
		r.f.Log.Info("agent awake", "agent", r.name)
	}
	r.inflight++
	return woke, nil
}

// rest counts a request out: the last one arms the sleep timer, or puts
// an agent whose entry changed to sleep at once.
func (r *running) rest() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	if r.inflight == 0 {
		r.settle()
	}
}

// asleep says whether the agent sleeps (or has left).
func (r *running) asleep() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held == nil
}

// entry is the agent's entry as served now.
func (r *running) entry() Unit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unit
}

// renew serves the agent by its changed entry u (its address the same):
// asleep, it wakes as u; awake, it sleeps as soon as no request or turn of
// it runs, and wakes as u at its next request. Its connections stay
// open: the requests already asked are answered as it was.
func (r *running) renew(u Unit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unit = u
	if r.held == nil {
		return
	}
	r.stale = true
	if r.inflight == 0 {
		r.disarm()
		r.settle()
	}
}

// settle puts an idle agent whose entry changed to sleep, or arms its
// sleep timer. r.mu is held, and no request of the agent is answered.
func (r *running) settle() {
	if r.stale && r.held != nil && !r.f.srv.Busy(r.name) {
		r.sleep()
		return
	}
	r.arm()
}

// arm starts the sleep timer, when the agent sleeps at all, or sooner
// when its entry changed. r.mu is held.
func (r *running) arm() {
	d := time.Duration(r.f.sleepAfter.Load())
	if r.stale && (d <= 0 || d > staleRetry) {
		d = staleRetry
	}
	if d <= 0 || r.held == nil || r.stopped {
		return
	}
	r.gen++
	r.f.dozer.set(r, time.Now().Add(d), r.gen)
}

// disarm stops the sleep timer. r.mu is held.
func (r *running) disarm() {
	r.gen++
	r.f.dozer.clear(r)
}

// doze puts the agent to sleep, if the timer gen is the one armed last
// and no request is being answered; a turn whose caller left puts it off
// for another sleepAfter.
func (r *running) doze(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || r.inflight > 0 || r.held == nil || r.stopped {
		return
	}
	if r.f.srv.Busy(r.name) {
		r.arm()
		return
	}
	r.sleep()
}

// staleRetry is how soon an agent whose entry changed, kept awake by a
// turn whose caller left, looks again whether it can sleep.
const staleRetry = time.Second

// sleep lets go of everything the agent holds but its listener. r.mu is
// held, and no request or turn of the agent runs.
func (r *running) sleep() {
	r.f.srv.Remove(r.name)
	if err := r.held.Close(); err != nil {
		r.f.Log.Warn("agent asleep: letting go", "agent", r.name, "error", err)
	}
	r.held = nil
	r.stale = false
	// Its idle connections closed: nothing of it waits but the waiter's
	// watch of its listener.
	r.f.conns.closeIdle(r, false)
	r.f.Log.Info("agent asleep", "agent", r.name)
	select {
	case r.f.dozed <- struct{}{}:
	default:
	}
}
