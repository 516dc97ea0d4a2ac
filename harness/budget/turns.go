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
	second  int64                // the unix second refusals are counted in now
	refusal [MaxRetryAfter]int64 // the refusals of each second up to it, by second modulo MaxRetryAfter
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
	s := t.roll(now.Unix())
	t.refusal[s%MaxRetryAfter]++
	t.mu.Unlock()
}

// roll makes second the second counted now, its count and those of the
// seconds since the last emptied, and returns it; under mu. A second
// before the last counted is counted as that one.
func (t *Turns) roll(second int64) int64 {
	if second <= t.second {
		return t.second
	}
	for s := max(t.second+1, second-MaxRetryAfter+1); s <= second; s++ {
		t.refusal[s%MaxRetryAfter] = 0
	}
	t.second = second
	return second
}

// refusedIn is how many were refused in the span seconds up to second,
// under mu.
func (t *Turns) refusedIn(second, span int64) int64 {
	n := int64(0)
	for s := second - min(span, MaxRetryAfter) + 1; s <= second; s++ {
		n += t.refusal[s%MaxRetryAfter]
	}
	return n
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
// for want of a place (see RetryAfter, the policy). Those waiting are the
// refused within a turn's length before now: told that long, each comes
// back about once in it.
func (t *Turns) RetryAfter(now time.Time) int {
	if t == nil {
		return 1
	}
	took := time.Duration(t.took.Load())
	t.mu.Lock()
	waiting := t.refusedIn(t.roll(now.Unix()), int64(math.Ceil(took.Seconds())))
	t.mu.Unlock()
	return RetryAfter(took, waiting, t.max.Load())
}

// MaxRetryAfter is the longest Retry-After a refused message is told.
const MaxRetryAfter = 30

// RetryAfter is how long, in seconds, a message refused for want of a
// place is told to wait before it is sent again, turns taking turn lately,
// waiting callers refused and bound places in all. A place comes free
// every turn/bound on average, so the waiting are told as many of those
// as wait: a few callers past the bound a second; as many as the bound or
// more a turn's length, in which the turns they wait on end. Told a
// second, a crowd would come back every second, each refused again until
// a turn ended, the process reading and refusing each time. At least a
// second, at most MaxRetryAfter.
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
