package budget

import "sync"

// Giver is a cache that keeps descriptors counted in a Pool and closes some
// of them when the Pool needs room for what cannot wait.
type Giver interface {
	// GiveBack closes up to n of the descriptors it keeps, least lately
	// used first, giving each back to the Pool with Put, and returns how
	// many it closed. It must not call the Pool's Take.
	GiveBack(n int) int
}

// Pool counts descriptors of one kind against a bound: what must have one
// takes it (Take), asking the pool's Givers for room, and waits for one to
// be given back when there is none (Wait); a cache keeps one only where
// there is room (Keep). Its zero value has no room; use NewPool. It is
// safe for concurrent use.
type Pool struct {
	mu sync.Mutex
	// guarded by mu
	size    int
	used    int
	givers  []Giver
	waiting []func() // called once each when room is given back
}

// NewPool is a pool of size descriptors.
func NewPool(size int) *Pool { return &Pool{size: size} }

// Resize makes the pool size descriptors: agents joined or left.
func (p *Pool) Resize(size int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.size = size
	p.mu.Unlock()
	p.wake()
}

// AddGiver lets the pool ask g for room.
func (p *Pool) AddGiver(g Giver) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.givers = append(p.givers, g)
	p.mu.Unlock()
}

// Take takes n descriptors for what needs them now (a caller's
// connection): where there is no room, it asks the caches to give some
// back first. False: there is none, and nothing is taken. A nil Pool has
// room for everything.
func (p *Pool) Take(n int) bool {
	if p == nil {
		return true
	}
	for range 3 { // room made may be taken by another before this one
		p.mu.Lock()
		short := p.used + n - p.size
		if short <= 0 {
			p.used += n
			p.mu.Unlock()
			return true
		}
		givers := p.givers
		p.mu.Unlock()
		gave := 0
		for _, g := range givers {
			if gave >= short {
				break
			}
			gave += g.GiveBack(short - gave)
		}
		if gave == 0 {
			return false
		}
	}
	return false
}

// Keep takes n descriptors for a cache, only where there is room: it
// never asks a Giver for room. False: the cache keeps nothing more. A nil
// Pool keeps everything.
func (p *Pool) Keep(n int) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used+n > p.size {
		return false
	}
	p.used += n
	return true
}

// Put gives back n descriptors taken or kept, and calls what waits for
// room.
func (p *Pool) Put(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.used -= n
	p.mu.Unlock()
	p.wake()
}

// Wait calls f once, on a goroutine of its own, when room is next given
// back (or at once, when there is room now). What f wants may be taken by
// another first: f then waits again.
func (p *Pool) Wait(f func()) {
	if p == nil {
		go f()
		return
	}
	p.mu.Lock()
	p.waiting = append(p.waiting, f)
	p.mu.Unlock()
	p.wake()
}

// wake calls as many waiting as there is room for.
func (p *Pool) wake() {
	p.mu.Lock()
	room := p.size - p.used
	var call []func()
	for room > 0 && len(p.waiting) > 0 {
		call = append(call, p.waiting[0])
		p.waiting[0] = nil
		p.waiting = p.waiting[1:]
		room--
	}
	if len(p.waiting) == 0 {
		p.waiting = nil // a slice never gives back the room it grew to
	}
	p.mu.Unlock()
	for _, f := range call {
		go f()
	}
}

// Used is how many descriptors are taken or kept, and the pool's size.
func (p *Pool) Used() (used, size int) {
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used, p.size
}
