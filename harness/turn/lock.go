package turn

import (
	"context"
	"sync"
)

// keyedMutex serializes turns per conversation in the process, and finds
// the turn that holds a conversation for a message that would steer it. An
// entry lives only while a turn holds or waits for it, so an idle agent
// holds nothing here. The zero value is ready to use; it is safe for
// concurrent use.
type keyedMutex struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]*keyed
}

type keyed struct {
	ch chan struct{} // holds one token while the conversation is free

	// guarded by keyedMutex.mu
	refs    int
	in      *inbox        // the holding turn's, from the moment it takes the token
	changed chan struct{} // closed when in is set, so waiters try the new holder
}

// hold is a conversation held by one turn.
type hold struct {
	k   *keyedMutex
	key string
	e   *keyed
	in  *inbox // the messages that steer the turn
}

// lock takes key's conversation for a turn. While it waits, steer (when
// not nil) is offered each holding turn's inbox, the holder at the call
// and every one after it; when steer says the message was taken, lock
// returns no hold and no error: the message is the holder's to answer.
// A holder's inbox is set in the same step as it takes the conversation,
// so no message falls between two turns unseen.
func (k *keyedMutex) lock(ctx context.Context, key string, steer func(*inbox) bool) (*hold, error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyed{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyed{ch: make(chan struct{}, 1), changed: make(chan struct{})}
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
		select {
		case <-e.ch:
			h := &hold{k: k, key: key, e: e, in: &inbox{gone: make(chan struct{})}}
			k.mu.Lock()
			e.in = h.in
			close(e.changed)
			e.changed = make(chan struct{})
			k.mu.Unlock()
			return h, nil
		case <-changed: // another turn holds it now: try steering that one
		case <-ctx.Done():
			k.release(key, e)
			return nil, ctx.Err()
		}
	}
}

// unlock lets the conversation go. The turn's inbox is closed first, so a
// message offered from now on waits for the next turn.
func (h *hold) unlock() {
	h.in.close()
	h.k.mu.Lock()
	h.e.in = nil
	h.k.mu.Unlock()
	h.e.ch <- struct{}{}
	h.k.release(h.key, h.e)
	h.in.leave()
}

func (k *keyedMutex) release(key string, e *keyed) {
	k.mu.Lock()
	if e.refs--; e.refs == 0 {
		delete(k.m, key)
	}
	k.mu.Unlock()
}

// rest lets go of the map once no turn holds or waits for a conversation:
// a map never gives back the room it grew to.
func (k *keyedMutex) rest() {
	k.mu.Lock()
	if len(k.m) == 0 {
		k.m = nil
	}
	k.mu.Unlock()
}

// held says whether a turn holds key's conversation, or waits for it.
func (k *keyedMutex) held(key string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key] != nil
}
