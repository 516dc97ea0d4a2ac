package budget

import (
	"errors"
	"strings"
	"testing"
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
			if got := p.PoolSize(); got != p.Limit-p.Agents-Reserve-p.MaxTurns*PerTurn || got < p.MaxTurns {
				t.Errorf("pool of %d: want room for every turn's caller", got)
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
	p := NewPool(8)
	c := &cache{p: p}
	p.AddGiver(c)
	for p.Keep(1) {
		c.n++
	}
	if c.n != 6 { // caches leave a quarter free
		t.Fatalf("a cache kept %d of 8, want 6", c.n)
	}
	for range 8 {
		if !p.Take(1) {
			t.Fatal("a connection found no room, the cache keeping some")
		}
	}
	if c.n != 0 || p.Take(1) {
		t.Fatalf("the pool full of connections: the cache keeps %d, and one more was taken", c.n)
	}
	woke := make(chan struct{})
	p.Wait(func() { close(woke) })
	select {
	case <-woke:
		t.Fatal("woken with no room")
	default:
	}
	p.Put(1)
	<-woke
	if used, size := p.Used(); used != 7 || size != 8 {
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
