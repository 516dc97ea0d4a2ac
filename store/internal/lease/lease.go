// Package lease is the lease policy every driver shares: who may take a
// lease, when one has run out, and which append its token lets through.
// Drivers keep a Record per conversation and change it only in the same
// step (transaction, or under the conversation's lock) as they read it.
package lease

import (
	"fmt"
	"sync"
	"time"

	"lnk.dev/linkharness/store"
)

// Record is a conversation's lease as a store keeps it. Gen changes on
// every take, renewal and release, so a watcher that sees the same Gen for
// a time to live knows nobody renewed it. No time is kept: times are the
// watchers' own.
type Record struct {
	Holder string // "" once let go
	Token  int64  // the fencing token: grows by one with each new holder
	Gen    int64
	TTL    time.Duration // the holder's time to live
}

// Watch remembers when this process first saw each lease in its present
// generation, by its own monotonic clock. The zero value is ready; it is
// safe for concurrent use.
type Watch struct {
	mu   sync.Mutex
	seen map[string]seen // by thread
}

type seen struct {
	gen int64
	at  time.Time // monotonic
}

// Take returns the record to write for holder asking for the lease of
// thread with ttl, given the current one (zero when there is none), and the
// token it gives; or store.ErrLeaseHeld while another holder's lease has not
// stayed unrenewed for its time to live since this process first saw it.
func (w *Watch) Take(thread string, cur Record, holder string, ttl time.Duration, now time.Time) (Record, error) {
	if holder == "" {
		return cur, fmt.Errorf("lease of %q: no holder named", thread)
	}
	if ttl <= 0 {
		return cur, fmt.Errorf("lease of %q: time to live %v", thread, ttl)
	}
	next := Record{Holder: holder, Token: cur.Token, Gen: cur.Gen + 1, TTL: ttl}
	switch cur.Holder {
	case holder: // a renewal
		return next, nil
	case "": // never taken, or let go
		next.Token++
		return next, nil
	}
	if !w.ranOut(thread, cur, now) {
		return cur, fmt.Errorf("%w: %q has the lease of %q", store.ErrLeaseHeld, cur.Holder, thread)
	}
	next.Token++
	return next, nil
}

// RanOut returns the holder whose lease ran out for holder's take, given
// the record Take was given and took: cur's holder when another's, else "".
func RanOut(cur Record, holder string) string {
	if cur.Holder == holder {
		return ""
	}
	return cur.Holder
}

// ranOut says whether cur has stayed in its generation for its time to
// live, as far as this process has seen, and remembers it when it is new.
func (w *Watch) ranOut(thread string, cur Record, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.seen[thread]
	if !ok || s.gen != cur.Gen {
		if w.seen == nil {
			w.seen = make(map[string]seen)
		}
		w.seen[thread] = seen{gen: cur.Gen, at: now}
		return false
	}
	if now.Sub(s.at) < cur.TTL {
		return false
	}
	delete(w.seen, thread)
	return true
}

// Release returns the record after token lets go, or store.ErrStaleLease
// when token is not the current holder's.
func Release(thread string, cur Record, token int64) (Record, error) {
	if cur.Holder == "" || cur.Token != token {
		return cur, fmt.Errorf("%w: release of %q with token %d, the lease's is %d", store.ErrStaleLease, thread, token, cur.Token)
	}
	return Record{Token: cur.Token, Gen: cur.Gen + 1}, nil
}

// Check says whether an append carrying token may be written: token must
// be the current holder's; token 0 passes only while nobody holds it.
func Check(thread string, cur Record, token int64) error {
	switch {
	case token == 0 && cur.Holder == "":
		return nil
	case token == 0:
		return fmt.Errorf("%w: append to %q without a lease while %q holds it", store.ErrStaleLease, thread, cur.Holder)
	case cur.Holder == "" || cur.Token != token:
		return fmt.Errorf("%w: append to %q with token %d, the lease's is %d", store.ErrStaleLease, thread, token, cur.Token)
	}
	return nil
}
