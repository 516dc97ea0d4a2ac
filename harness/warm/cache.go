package warm

import (
	"sync"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/store"
)

// Default bounds of a Cache (see CHOICES.md).
const (
	DefaultConversations = 256
	DefaultBytes         = 64 << 20
	DefaultIdle          = time.Minute // a conversation whose turns come further apart gains little
)

// descriptors is what a Cache's Pool counts for each conversation it
// keeps: its log, its folder, its id index, its copy for people, its told
// file, a compact conversation's frames, and the agent's home held while
// any of its conversations is kept, counted with each.
const descriptors = 7

// Cache keeps, for the conversations a process has in use, what their
// last turn composed, at most MaxConversations of them and MaxBytes of
// their events and wire bytes together: past either, the conversation
// used least lately is let go of; and one with no turn for Idle is let go
// of at the next turn of any. It is the process's, shared by its Runners,
// built in main; Release and Forget let go of what it keeps when the
// process or an agent goes idle. The zero value is ready to use. It is
// safe for concurrent use.
type Cache struct {
	MaxConversations int              // 0: DefaultConversations
	MaxBytes         int              // 0: DefaultBytes
	Idle             time.Duration    // 0: DefaultIdle
	Now              func() time.Time // the clock; nil is time.Now
	// Pool, when not nil, counts the descriptors a conversation kept
	// holds (seven each): one is kept only where the pool has room, the
	// conversations used least lately let go of to make it.
	Pool *budget.Pool

	mu sync.Mutex
	// guarded by mu
	kept  map[key]*Conv
	bytes int
	clock uint64 // counts puts, for the least lately used
}

type key struct{ agent, thread string }

func (w *Cache) maxConversations() int {
	if w.MaxConversations > 0 {
		return w.MaxConversations
	}
	return DefaultConversations
}

func (w *Cache) idle() time.Duration {
	if w.Idle > 0 {
		return w.Idle
	}
	return DefaultIdle
}

func (w *Cache) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Cache) maxBytes() int {
	if w.MaxBytes > 0 {
		return w.MaxBytes
	}
	return DefaultBytes
}

// New begins what a turn keeps of the conversation in folder dir, opened
// afresh as conv, for its next turn. Nil for a nil Cache: the turn keeps
// nothing.
func (w *Cache) New(dir string, conv store.Conversation) *Conv {
	if w == nil {
		return nil
	}
	return &Conv{dir: dir, Conv: conv}
}

// Take returns what the last turn of agent's thread left, kept in dir, and
// keeps it no longer: the turn holds it alone, its files the turn's own.
// Nil: nothing is kept.
func (w *Cache) Take(agent, thread, dir string) *Conv {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	c := w.drop(key{agent, thread})
	w.mu.Unlock()
	if c != nil && (c.dir != dir || w.now().Sub(c.at) > w.idle()) { // another home's agent of the same name, or idle
		c.Close()
		return nil
	}
	return c
}

// Holds says whether w keeps agent's thread, kept in dir: the folder its
// last turn in this process found it in.
func (w *Cache) Holds(agent, thread, dir string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.kept[key{agent, thread}]
	return c != nil && c.dir == dir
}

// drop takes the conversation kept by k out of w, its room given back to
// the pool, or returns nil. w.mu is held; the caller closes it.
func (w *Cache) drop(k key) *Conv {
	c := w.kept[k]
	if c != nil {
		delete(w.kept, k)
		w.bytes -= c.bytes
		w.Pool.Put(descriptors)
	}
	return c
}

// leastUsed is the key of the conversation used least lately, and false
// when w keeps none. w.mu is held.
func (w *Cache) leastUsed() (key, bool) {
	var (
		lk    key
		least *Conv
	)
	for k, o := range w.kept {
		if least == nil || o.used < least.used {
			lk, least = k, o
		}
	}
	return lk, least != nil
}

// Put keeps c for the next turn of agent's thread, letting go of the
// conversations used least lately while past its bounds or while its
// pool has no room for c's files. One already kept (by another Runner's
// turn) is let go of: c is the newer.
func (w *Cache) Put(agent, thread string, c *Conv) {
	c.bytes = c.msgs.prefix.Size()
	for _, n := range c.events.size {
		c.bytes += 2 * n // the event decoded, and its message
	}
	if c.bytes > w.maxBytes() {
		c.Close()
		return
	}
	var out []*Conv
	defer func() {
		for _, o := range out {
			o.Close()
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kept == nil {
		w.kept = make(map[key]*Conv)
	}
	k := key{agent, thread}
	if old := w.drop(k); old != nil {
		out = append(out, old)
	}
	w.clock++
	c.used, c.at = w.clock, w.now()
	for ok, o := range w.kept {
		if c.at.Sub(o.at) > w.idle() {
			out = append(out, w.drop(ok))
		}
	}
	for !w.Pool.Keep(descriptors) {
		lk, ok := w.leastUsed()
		if !ok { // no room in the pool for any: c is not kept
			out = append(out, c)
			return
		}
		out = append(out, w.drop(lk))
	}
	w.kept[k] = c
	w.bytes += c.bytes
	for len(w.kept) > w.maxConversations() || w.bytes > w.maxBytes() {
		lk, _ := w.leastUsed()
		out = append(out, w.drop(lk))
	}
}

// Forget lets go of what is kept for agent's conversations: its agent
// sleeps, or leaves. A turn running keeps its own until it ends.
func (w *Cache) Forget(agent string) {
	if w == nil {
		return
	}
	var out []*Conv
	w.mu.Lock()
	for k := range w.kept {
		if k.agent == agent {
			out = append(out, w.drop(k))
		}
	}
	w.mu.Unlock()
	for _, c := range out {
		c.Close()
	}
}

// Release lets go of everything kept: the process is idle.
func (w *Cache) Release() {
	if w == nil {
		return
	}
	var out []*Conv
	w.mu.Lock()
	for k := range w.kept {
		out = append(out, w.drop(k))
	}
	w.kept = nil
	w.mu.Unlock()
	for _, c := range out {
		c.Close()
	}
}

// Len is how many conversations w keeps, and about how many bytes.
func (w *Cache) Len() (int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.kept), w.bytes
}

// MarkTold writes seq as told through the told file kept open with agent's
// conversation thread, kept in dir, and reports whether one was. A turn
// takes the conversation out of w before it uses the file, and w lets go
// of it before closing it, so w's lock keeps the file to this call. Else
// the caller writes the file itself.
func (w *Cache) MarkTold(agent, thread, dir string, seq int64) (bool, error) {
	if w == nil {
		return false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.kept[key{agent, thread}]
	if c == nil || c.dir != dir {
		return false, nil
	}
	return c.files.told.Write(seq)
}
