package budget

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSized(t *testing.T) {
	for _, c := range []struct {
		name  string
		plan  Plan
		turns int    // MaxTurns once sized; 0 when refused
		says  string // in the refusal
	}{
		{"one agent, the default", Plan{Limit: 1 << 20, Agents: 1}, DefaultMaxTurns, ""},
		{"10,000 agents under 20,000", Plan{Limit: 20_000, Agents: 10_000}, DefaultMaxTurns, ""},
		{"the default lowered to fit", Plan{Limit: 2_000, Agents: 1_000}, (2_000 - 1_000 - Reserve) / (PerTurn + 1), ""},
		{"20,000 agents under 20,000", Plan{Limit: 20_000, Agents: 20_000}, 0, "20000 agents need 20081 descriptors"},
		{"no room for one turn", Plan{Limit: 20_000, Agents: 19_930}, 0, "over the limit of 20000"},
		{"max_turns asked fits", Plan{Limit: 20_000, Agents: 10_000, MaxTurns: 500}, 500, ""},
		{"max_turns asked does not fit", Plan{Limit: 20_000, Agents: 10_000, MaxTurns: 600}, 0, "each of 600 turns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.plan.Sized()
			if c.turns == 0 {
				if !errors.Is(err, ErrNoRoom) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "ulimit -n") {
					t.Fatalf("%+v: %v, want ErrNoRoom saying %q and how to raise the limit", c.plan, err, c.says)
				}
				return
			}
			if err != nil || p.MaxTurns != c.turns || p.Need() > p.Limit {
				t.Fatalf("%+v: %+v %v, want %d turns within the limit", c.plan, p, err, c.turns)
			}
			if p.Conns() <= p.MaxTurns || p.Agents+Reserve+p.MaxTurns*PerTurn+p.Conns()+p.Cached() != p.Limit {
				t.Errorf("%d connections, %d cached: want room for every turn's caller, and the limit shared out", p.Conns(), p.Cached())
			}
		})
	}
}

// cache is a Giver keeping n descriptors of a pool.
type cache struct {
	p *Pool
	n int
}

func (c *cache) GiveBack(n int) int {
	n = min(n, c.n)
	c.n -= n
	c.p.Put(n)
	return n
}

func TestPool(t *testing.T) {
	caches, conns := NewPool(6), NewPool(8)
	c := &cache{p: conns}
	conns.AddGiver(c)
	for caches.Keep(1) {
	}
	if used, _ := caches.Used(); used != 6 {
		t.Fatalf("a cache kept %d of 6", used)
	}
	for range 3 { // idle connections, kept by their callers
		conns.Take(1)
		c.n++
	}
	for range 5 {
		if !conns.Take(1) {
			t.Fatal("a connection found no room, three idle")
		}
	}
	if !conns.Take(1) || c.n != 2 {
		t.Fatalf("a connection past the bound: %d idle left, want one closed for it", c.n)
	}
	c.n = 0 // the rest in use
	if conns.Take(1) {
		t.Fatal("a connection past the bound, none idle")
	}
	woke := make(chan struct{})
	conns.Wait(func() { close(woke) })
	select {
	case <-woke:
		t.Fatal("woken with no room")
	default:
	}
	conns.Put(1)
	<-woke
	if used, size := conns.Used(); used != 7 || size != 8 {
		t.Errorf("used %d of %d", used, size)
	}
}

func TestTurns(t *testing.T) {
	ts := NewTurns(2)
	for range 2 {
		if ts.Begin() != nil {
			t.Fatal("two turns under a bound of two")
		}
	}
	if err := ts.Begin(); !errors.Is(err, ErrFull) {
		t.Fatalf("a third: %v", err)
	}
	ts.Force() // a turn promised already
	if ts.Running() != 3 || ts.Refused() != 1 {
		t.Fatalf("running %d, refused %d", ts.Running(), ts.Refused())
	}
	ts.End()
	ts.End()
	if ts.Begin() != nil {
		t.Fatal("a place came free")
	}
	var none *Turns
	if none.Begin() != nil {
		t.Fatal("no bound refused")
	}
}

// What a message refused for want of a place is told: a second for a few
// callers past the bound, a turn's length for as many as the bound.
func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		turn           time.Duration
		waiting, bound int64
		want           int
	}{
		{0, 2500, 500, 1},                       // no turn ended yet
		{3 * time.Second, 0, 500, 1},            // nobody refused lately
		{3 * time.Second, 5, 500, 1},            // a few: a place comes free within the second
		{2500 * time.Millisecond, 2500, 500, 3}, // a crowd: back as the turns end
		{2500 * time.Millisecond, 500, 500, 3},
		{10 * time.Second, 250, 500, 5}, // half the bound: half a turn
		{10 * time.Minute, 9000, 500, MaxRetryAfter},
		{time.Second, 10, 0, 1}, // no bound
	} {
		if got := RetryAfter(c.turn, c.waiting, c.bound); got != c.want {
			t.Errorf("RetryAfter(%v, %d, %d) = %d, want %d", c.turn, c.waiting, c.bound, got, c.want)
		}
	}
}

// Turns counts the refusals of each second and averages the turns'
// lengths: its Retry-After counts as waiting those refused within a
// turn's length.
func TestTurnsRetryAfter(t *testing.T) {
	ts := NewTurns(4)
	at := time.Unix(1000, 0)
	if got := ts.RetryAfter(at); got != 1 {
		t.Fatalf("before any turn: %d", got)
	}
	ts.Took(8 * time.Second)
	for range 4 {
		ts.Refuse(at)
	}
	for _, c := range []struct {
		after time.Duration
		want  int
	}{
		{0, 8},               // four refused with a bound of four, turns of 8 s
		{-time.Second, 8},    // a clock gone back counts as the last second
		{7 * time.Second, 8}, // still within a turn's length
		{8 * time.Second, 1}, // they came back, or went
		{time.Hour, 1},       // the seconds between emptied
	} {
		if got := ts.RetryAfter(at.Add(c.after)); got != c.want {
			t.Fatalf("%v after four refused: %d, want %d", c.after, got, c.want)
		}
	}
	later := time.Unix(5000, 0)
	ts.Refuse(later)
	if got := ts.RetryAfter(later); got != 2 {
		t.Fatalf("one refused lately: %d, want a quarter of 8 s", got)
	}
	ts.Took(16 * time.Second) // weighs an eighth: 9 s
	for range 3 {
		ts.Refuse(later.Add(5 * time.Second))
	}
	if got := ts.RetryAfter(later.Add(5 * time.Second)); got != 9 {
		t.Fatalf("four refused within 9 s, after a turn of 16 s: %d, want 9", got)
	}
	if ts.Refused() != 8 {
		t.Fatalf("refused %d, want 8", ts.Refused())
	}
}
