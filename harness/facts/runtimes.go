package facts

import (
	"sync"
	"time"
)

// RuntimeTTL is how long what a runtime said of a model is kept: a turn
// asks before every call, and a runtime says the same until a model is
// pulled again or set otherwise.
const RuntimeTTL = time.Minute

// Runtimes keeps what runtimes on the machine said of the models they run
// (see Model.SetRuntime), by runtime and model, for RuntimeTTL. Its zero
// value is ready; it is safe for concurrent use.
type Runtimes struct {
	mu   sync.Mutex // guards said
	said map[string]runtimeSaid
}

type runtimeSaid struct {
	trained, runs int
	at            time.Time
}

// Said returns what the runtime and model named by key said less than
// RuntimeTTL before now: the window the model was trained for, and the one
// it runs it with.
func (c *Runtimes) Said(key string, now time.Time) (trained, runs int, ok bool) {
	c.mu.Lock()
	r, ok := c.said[key]
	c.mu.Unlock()
	if !ok || now.Sub(r.at) >= RuntimeTTL {
		return 0, 0, false
	}
	return r.trained, r.runs, true
}

// Keep records what the runtime and model named by key said at now.
func (c *Runtimes) Keep(key string, trained, runs int, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.said == nil {
		c.said = map[string]runtimeSaid{}
	}
	c.said[key] = runtimeSaid{trained: trained, runs: runs, at: now}
}
