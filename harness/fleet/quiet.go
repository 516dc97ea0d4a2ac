package fleet

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// quietGC stops the Go runtime's own collections while every agent
// sleeps: nothing of theirs allocates then, and the collection the runtime
// forces every two minutes would only touch again, page by page, the
// memory just given back (some 20 ms of CPU at 1,000 agents asleep). A
// memory limit a little over what the process holds still collects what
// little else allocates while they sleep (a supervisor's /healthz, say).
// It is safe for concurrent use.
type quietGC struct {
	mu sync.Mutex
	// guarded by mu
	on      bool
	percent int   // GOGC as it was
	limit   int64 // the memory limit as it was
}

// quietRoom is how far over what it holds the process may grow while
// quiet before it collects.
const quietRoom = 8 << 20

// start quiets the collector if asleep still says every agent sleeps; an
// agent that wakes calls stop once it is awake.
func (q *quietGC) start(asleep func() bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.on || !asleep() {
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	held := s[0].Value.Uint64() - s[1].Value.Uint64()
	q.limit = debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(int64(held)+quietRoom, q.limit)) // never over GOMEMLIMIT
	q.percent = debug.SetGCPercent(-1)
	q.on = true
}

// stop gives the collector back as it was: an agent woke or joined.
func (q *quietGC) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.on {
		return
	}
	debug.SetGCPercent(q.percent)
	debug.SetMemoryLimit(q.limit)
	q.on = false
}
