package budget

import (
	"errors"
	"sync/atomic"
)

// ErrFull comes when a message would begin a turn while the process runs
// as many as it lets run at once: nothing of the message is written, and
// sending it again later is answered. A server answers it 503 with
// Retry-After.
var ErrFull = errors.New("budget: as many turns run as the process lets run at once")

// Turns bounds the turns in flight in a process. The zero value lets none
// run; use NewTurns. It is safe for concurrent use, and shared by every
// agent's runner.
type Turns struct {
	max     atomic.Int64
	running atomic.Int64
	refused atomic.Int64
}

// NewTurns bounds the turns in flight at n (at least 1).
func NewTurns(n int) *Turns {
	t := &Turns{}
	t.SetMax(n)
	return t
}

// SetMax bounds the turns in flight at n (at least 1) from now on: turns
// running past a lower bound run to their end.
func (t *Turns) SetMax(n int) {
	if t != nil {
		t.max.Store(int64(max(1, n)))
	}
}

// Begin takes a place for a turn, or is ErrFull when every place is taken.
// A nil *Turns bounds nothing.
func (t *Turns) Begin() error {
	if t == nil {
		return nil
	}
	if t.running.Add(1) > t.max.Load() {
		t.running.Add(-1)
		t.refused.Add(1)
		return ErrFull
	}
	return nil
}

// End gives back the place Begin took.
func (t *Turns) End() {
	if t != nil {
		t.running.Add(-1)
	}
}

// Running is how many turns hold a place now.
func (t *Turns) Running() int64 {
	if t == nil {
		return 0
	}
	return t.running.Load()
}

// Max is the bound.
func (t *Turns) Max() int64 {
	if t == nil {
		return 0
	}
	return t.max.Load()
}

// Refused is how many turns Begin refused since the process started.
func (t *Turns) Refused() int64 {
	if t == nil {
		return 0
	}
	return t.refused.Load()
}

// Force takes a place past the bound: for a turn the process promised
// already, such as a message a steered turn handed back. End gives it back.
func (t *Turns) Force() {
	if t != nil {
		t.running.Add(1)
	}
}
