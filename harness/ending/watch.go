package ending

import (
	"log/slog"
	"sync"
	"time"

	"lnk.dev/linkharness/harness/home"
)

// Every is how often a running turn's record is read: the bound on how
// long a turn runs on once another process asked it to end, and on how
// long that process takes to see it let go.
const Every = 250 * time.Millisecond

// Ender is what a Watch asks to end: a running turn's inbox
// (running.Inbox's End).
type Ender interface {
	End(cause error) bool
}

// Watch is one running turn's, kept by the turn and added to the process's
// Watcher while it runs. Its zero value watches nothing.
type Watch struct {
	Dir   string // the conversation's folder
	After int64  // the seq of the event before the turn's message: a record past it is the turn's
	End   Ender  // asked to end, once, when the turn's record is found
	Cause error  // what End is given

	path string // the record's, made at the first read
	buf  [maxRecord]byte
}

// Watcher reads the records of the process's running turns, every Every
// while one runs, and once more after the last ends. The zero value is
// ready; a nil Watcher watches nothing.
type Watcher struct {
	Log  *slog.Logger  // a record that cannot be read or removed; nil logs nothing
	Tick time.Duration // how often the records are read; 0 is Every

	mu      sync.Mutex
	watches map[*Watch]struct{}
	timer   *time.Timer // armed while watches is not empty, and until its next tick after
	armed   bool
}

// Add watches w until Remove. A turn adds its Watch once its message is
// written.
func (wr *Watcher) Add(w *Watch) {
	if wr == nil {
		return
	}
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if wr.watches == nil {
		wr.watches = map[*Watch]struct{}{}
	}
	wr.watches[w] = struct{}{}
	if !wr.armed {
		wr.arm()
	}
}

// Remove stops watching w; a w not watched is nothing. A turn removes its
// Watch before it lets its conversation go. The tick set is left to run:
// finding no turn it sets none, so a process whose last turn ended holds
// no tick past one Every, and turns that follow one another in less do
// not set one each (setting a timer sooner than any other wakes the
// runtime's poller, two system calls).
func (wr *Watcher) Remove(w *Watch) {
	if wr == nil {
		return
	}
	wr.mu.Lock()
	delete(wr.watches, w)
	wr.mu.Unlock()
}

// Armed says whether a tick is set: while a turn is watched, and until
// the tick after the last is removed.
func (wr *Watcher) Armed() bool {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.armed
}

// arm sets the timer for the next tick. The caller holds mu.
func (wr *Watcher) arm() {
	every := wr.Tick
	if every <= 0 {
		every = Every
	}
	if wr.timer == nil {
		wr.timer = time.AfterFunc(every, wr.tick)
	} else {
		wr.timer.Reset(every)
	}
	wr.armed = true
}

// tick reads the record of each running turn, ends the turns whose record
// it finds, and arms the next tick while a turn runs. A turn's Watch is
// read outside the lock: a turn removes it before it lets its folder go,
// and the record is only read, never its folder's contents, so a read
// that races a Remove reads a record no turn honors (see found).
func (wr *Watcher) tick() {
	wr.mu.Lock()
	ws := make([]*Watch, 0, len(wr.watches))
	for w := range wr.watches {
		ws = append(ws, w)
	}
	wr.mu.Unlock()
	for _, w := range ws {
		if wr.found(w) {
			w.End.End(w.Cause)
			if err := Clear(w.Dir); err != nil && wr.Log != nil {
				wr.Log.Error("end record not removed", "folder", w.Dir, "error", err)
			}
			wr.Remove(w)
		}
	}
	wr.mu.Lock()
	wr.armed = false
	if len(wr.watches) > 0 {
		wr.arm()
	}
	wr.mu.Unlock()
}

// found says whether w's record is there and asks w's turn to end.
func (wr *Watcher) found(w *Watch) bool {
	if w.path == "" {
		p, err := home.In(w.Dir, home.ChatEnd)
		if err != nil {
			return false
		}
		w.path = p
	}
	seq, ok, err := read(w.path, &w.buf)
	if err != nil && wr.Log != nil {
		wr.Log.Error("end record not read", "folder", w.Dir, "error", err)
	}
	return ok && seq > w.After
}
