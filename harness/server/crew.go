package server

import "sync"

// crew runs turns on goroutines kept between them. A turn's call chain
// runs deep, so a goroutine made for each began small and grew its stack
// two or three times, each a copy: about 3% of a message's CPU. A goroutine
// done with a turn waits for the next instead, its stack grown, while
// turns keep coming: at most maxIdle wait, and every one ends when the
// process rests (Server.Rest, after IdleFree with no turn), so an idle
// process keeps none. The collector shrinks a waiting one's stack as it
// would any goroutine's that uses little of it.
//
// The zero value is ready to use; it is safe for concurrent use.
type crew struct {
	mu sync.Mutex
	// guarded by mu
	idle []chan func() // each waiting goroutine's, the last to wait last
}

// maxIdle bounds the goroutines a crew keeps waiting: more than the turns
// a process runs at once, mostly.
const maxIdle = 64

// run runs f on a waiting goroutine, or on a new one.
func (c *crew) run(f func()) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		next := c.idle[n-1]
		c.idle[n-1] = nil
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		next <- f
		return
	}
	c.mu.Unlock()
	go c.work(f)
}

// work runs f, then what run hands it, until it is let go: closed, or the
// crew has enough waiting.
func (c *crew) work(f func()) {
	next := make(chan func(), 1)
	for f != nil {
		f()
		c.mu.Lock()
		if len(c.idle) >= maxIdle {
			c.mu.Unlock()
			return
		}
		c.idle = append(c.idle, next)
		c.mu.Unlock()
		f = <-next // nil once closed
	}
}

// rest ends every waiting goroutine.
func (c *crew) rest() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, next := range idle {
		close(next)
	}
}
