package budget

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
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
	took    atomic.Int64 // a turn's length lately, in nanoseconds (Took)

	mu sync.Mutex
	// guarded by mu
	second     int64 // the unix second refusals are counted in
	now, prior int64 // the refusals of that second, and of the one before it
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
		t.Refuse(time.Now())
		return ErrFull
	}
	return nil
}

// Refuse counts a message refused at now for want of a place: Begin's, or
// one a caller refused before asking Begin, seeing every place taken.
func (t *Turns) Refuse(now time.Time) {
	if t == nil {
		return
	}
	t.refused.Add(1)
	t.mu.Lock()
	t.roll(now.Unix())
	t.now++
	t.mu.Unlock()
}

// roll makes second the second counted now, under mu.
func (t *Turns) roll(second int64) {
	switch second {
	case t.second:
		return
	case t.second + 1:
		t.prior = t.now
	default:
		t.prior = 0
	}
	t.second, t.now = second, 0
}

// Took tells the length of a turn that ended: Turns keeps an average of
// the last turns' lengths, each weighing an eighth.
func (t *Turns) Took(d time.Duration) {
	if t == nil || d <= 0 {
		return
	}
	for {
		old := t.took.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if t.took.CompareAndSwap(old, next) {
			return
		}
	}
}

// RetryAfter is the Retry-After, in seconds, of a message refused at now
// for want of a place (see RetryAfter, the policy).
func (t *Turns) RetryAfter(now time.Time) int {
	if t == nil {
		return 1
	}
	t.mu.Lock()
	t.roll(now.Unix())
	waiting := max(t.now, t.prior)
	t.mu.Unlock()
	return RetryAfter(time.Duration(t.took.Load()), waiting, t.max.Load())
}

// MaxRetryAfter is the longest Retry-After a refused message is told.
const MaxRetryAfter = 30

// RetryAfter is how long, in seconds, a message refused for want of a
// place is told to wait before it is sent again, turns taking turn lately,
// waiting refused in the last second and bound places in all. A place
// comes free whenever a turn ends, so a few callers past the bound are
// told a second; as many as the bound or more, all come back as the turns
// they wait on end, so they are told a turn's length: told a second,
// they would come back every second, each refused again until a turn
// ended, the process reading and refusing each time. At least a second,
// at most MaxRetryAfter.
func RetryAfter(turn time.Duration, waiting, bound int64) int {
	if turn <= 0 || waiting <= 0 || bound <= 0 {
		return 1
	}
	s := math.Ceil(turn.Seconds() * min(1, float64(waiting)/float64(bound)))
	return int(min(MaxRetryAfter, max(1, s)))
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

// Refused is how many messages were refused for want of a place since the
// process started (Begin and Refuse).
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
