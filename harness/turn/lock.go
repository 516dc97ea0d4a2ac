package turn

import (
	"context"
	"sync"
)

// keyedMutex serializes turns per conversation in the process. An entry
// lives only while a turn holds or waits for it, so an idle agent holds
// nothing here. The zero value is ready to use.
type keyedMutex struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]*keyed
}

type keyed struct {
	ch   chan struct{} // holds one token while the conversation is free
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyed{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyed{ch: make(chan struct{}, 1)}
		e.ch <- struct{}{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case <-e.ch:
		return func() { e.ch <- struct{}{}; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
