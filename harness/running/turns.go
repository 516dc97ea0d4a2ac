package running

import (
	"context"
	"sync"
)

// Turns serializes turns per conversation in the process, each
// conversation named by a key, and finds the turn that holds a
// conversation for a message that would steer it; M is the messages'
// type. The zero value is ready to use; it is safe for concurrent use.
type Turns[M any] struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]*entry[M]
}

type entry[M any] struct {
	ch chan struct{} // holds one token while the conversation is free

	// guarded by Turns.mu
	refs    int
	in      *Inbox[M]     // the holding turn's, from the moment it takes the token
	changed chan struct{} // closed when in is set, so waiters try the new holder
}

// Hold is a conversation held by one turn.
type Hold[M any] struct {
	k   *Turns[M]
	key string
	e   *entry[M]
	In  *Inbox[M] // the messages that steer the turn
}

// Lock takes key's conversation for a turn. While it waits, steer (when
// not nil) is offered each holding turn's inbox, the holder at the call
// and every one after it; when steer says the message was taken, Lock
// returns no hold and no error: the message is the holder's to answer.
// A holder's inbox is set in the same step as it takes the conversation,
// so no message falls between two turns unseen.
func (k *Turns[M]) Lock(ctx context.Context, key string, steer func(*Inbox[M]) bool) (*Hold[M], error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*entry[M]{}
	}
	e := k.m[key]
	if e == nil {
		e = &entry[M]{ch: make(chan struct{}, 1), changed: make(chan struct{})}
		e.ch <- struct{}{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	for {
		k.mu.Lock()
		in, changed := e.in, e.changed
		k.mu.Unlock()
		if in != nil && steer != nil && steer(in) {
			k.release(key, e)
			return nil, nil
		}
		// Taken at once when nobody holds it, without asking ctx for its
		// Done channel, which a context makes when first asked.
		select {
		case <-e.ch:
			return k.take(key, e), nil
		default:
		}
		select {
		case <-e.ch:
			return k.take(key, e), nil
		case <-changed: // another turn holds it now: try steering that one
		case <-ctx.Done():
			k.release(key, e)
			return nil, ctx.Err()
		}
	}
}

// take is the hold of key's conversation, e, once Lock took it.
func (k *Turns[M]) take(key string, e *entry[M]) *Hold[M] {
	h := &Hold[M]{k: k, key: key, e: e, In: &Inbox[M]{gone: make(chan struct{})}}
	k.mu.Lock()
	e.in = h.In
	close(e.changed)
	e.changed = make(chan struct{})
	k.mu.Unlock()
	return h
}

// Unlock lets the conversation go. The turn's inbox is closed first, so a
// message offered from now on waits for the next turn.
func (h *Hold[M]) Unlock() {
	h.In.Close()
	h.k.mu.Lock()
	h.e.in = nil
	h.k.mu.Unlock()
	h.e.ch <- struct{}{}
	h.k.release(h.key, h.e)
	h.In.leave()
}

func (k *Turns[M]) release(key string, e *entry[M]) {
	k.mu.Lock()
	if e.refs--; e.refs == 0 {
		delete(k.m, key)
	}
	k.mu.Unlock()
}

// Rest lets go of the map once no turn holds or waits for a conversation:
// a map never gives back the room it grew to.
func (k *Turns[M]) Rest() {
	k.mu.Lock()
	if len(k.m) == 0 {
		k.m = nil
	}
	k.mu.Unlock()
}

// Held says whether a turn holds key's conversation, or waits for it.
func (k *Turns[M]) Held(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key] != nil
}

// Holder returns the inbox of the turn holding key's conversation, or nil.
func (k *Turns[M]) Holder(key string) *Inbox[M] {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.m[key]; e != nil {
		return e.in
	}
	return nil
}

// Threads returns the threads whose turns run, in no order: those whose
// turn said its thread (Inbox.SetThread) and has not let it go.
func (k *Turns[M]) Threads() []string {
	k.mu.Lock()
	ins := make([]*Inbox[M], 0, len(k.m))
	for _, e := range k.m {
		if e.in != nil {
			ins = append(ins, e.in)
		}
	}
	k.mu.Unlock()
	var out []string
	for _, in := range ins {
		in.mu.Lock()
		if in.thread != "" && !in.left {
			out = append(out, in.thread)
		}
		in.mu.Unlock()
	}
	return out
}

// Len is how many conversations a turn holds or waits for.
func (k *Turns[M]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}

// Queue says, of key's conversation, how many callers hold or wait for
// it, how many messages wait in its holding turn's inbox, offered and not
// yet taken, and whether a turn holds it.
func (k *Turns[M]) Queue(key string) (callers, waiting int, held bool) {
	k.mu.Lock()
	var in *Inbox[M]
	if e := k.m[key]; e != nil {
		in, callers = e.in, e.refs
	}
	k.mu.Unlock()
	if in != nil {
		in.mu.Lock()
		waiting = len(in.waiting)
		in.mu.Unlock()
	}
	return callers, waiting, in != nil
}
