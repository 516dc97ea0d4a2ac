package fleet

import (
	"container/heap"
	"sync"
	"time"
)

// dozer puts a process's agents to sleep when their time comes: one timer
// for all of them, and a goroutine only while it fires, where a timer of
// each agent's had each fire on a goroutine of its own, thousands at once
// (the runtime keeps every goroutine's descriptor it ever made). It is safe
// for concurrent use; the zero value is ready.
type dozer struct {
	mu sync.Mutex
	// guarded by mu, with each running's dueIndex
	due   dueHeap
	timer *time.Timer // fires at due[0]'s time; stopped while nothing is due
}

// dueAt is an agent's sleep coming: at its time, if the agent's timer is
// still gen then.
type dueAt struct {
	at  time.Time
	r   *running
	gen int
}

// set has r doze at at, as its timer gen; it replaces r's sleep coming, if
// it had one.
func (d *dozer) set(r *running, at time.Time, gen int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := r.dueIndex; i >= 0 {
		d.due[i].at, d.due[i].gen = at, gen
		heap.Fix(&d.due, i)
	} else {
		heap.Push(&d.due, dueAt{at: at, r: r, gen: gen})
	}
	d.reset()
}

// clear takes r's sleep coming away, if it has one.
func (d *dozer) clear(r *running) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := r.dueIndex; i >= 0 {
		heap.Remove(&d.due, i)
		d.reset()
	}
}

// reset sets the timer to the next sleep due, or stops it. d.mu is held.
func (d *dozer) reset() {
	if len(d.due) == 0 {
		if d.timer != nil {
			d.timer.Stop()
		}
		if cap(d.due) > shrinkPast {
			d.due = nil // a slice never gives back the room it grew to
		}
		return
	}
	wait := time.Until(d.due[0].at)
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.fire)
		return
	}
	d.timer.Reset(wait)
}

// fire puts every agent whose sleep is due to sleep, one after another.
func (d *dozer) fire() {
	var now []dueAt
	d.mu.Lock()
	for len(d.due) > 0 && !d.due[0].at.After(time.Now()) {
		now = append(now, heap.Pop(&d.due).(dueAt))
	}
	d.reset()
	d.mu.Unlock()
	for _, e := range now {
		e.r.doze(e.gen)
	}
}

// dueHeap orders agents' sleeps by their time, the soonest first, keeping
// each running's index in it.
type dueHeap []dueAt

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].r.dueIndex, h[j].r.dueIndex = i, j
}

func (h *dueHeap) Push(x any) {
	e := x.(dueAt)
	e.r.dueIndex = len(*h)
	*h = append(*h, e)
}

func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = dueAt{}
	*h = old[:len(old)-1]
	e.r.dueIndex = -1
	return e
}
