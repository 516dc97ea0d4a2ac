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
