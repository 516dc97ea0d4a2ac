package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// LeaseTTL is the time to live a turn's lease is taken with. A holder
// renews every third of it; a process that dies holding it keeps the next
// turn of its conversation waiting this long.
const LeaseTTL = 15 * time.Second

var holders atomic.Int64

// LeaseTaker is a Leaser that says when it gave the lease by taking it
// from a holder whose time to live ran out, so the taker can say so.
type LeaseTaker interface {
	// LeaseFrom is Lease, also returning the holder whose lease ran out and
	// was taken; "" when the lease was free, let go, or holder's own.
	LeaseFrom(ctx context.Context, holder string, ttl time.Duration) (token int64, ranOut string, err error)
}

// HoldLease takes conv's lease, if conv is a Leaser, for a holder named
// after who (a word for people) with the host, the process and a count, so
// no two calls share one; it waits while another holds the lease, until ctx
// is done. It renews the lease every ttl/3 until release is called, which
// lets it go. The Conversation it returns is conv with its appends carrying
// the lease's token (a *Leased); a conv that is no Leaser, or says
// ErrUnsupported, is returned as it is, with a release that does nothing.
//
// Expiry follows the holder's own monotonic clock: once ttl has passed
// since the holder last asked for the lease and was answered, the lease may
// have gone to another, so its appends are refused with ErrStaleLease
// without being sent. The store does its part by the clock of whoever asks
// next (see Leaser), so no machine's wall time is ever compared with
// another's.
func HoldLease(ctx context.Context, conv Conversation, who string, ttl time.Duration) (held Conversation, release func(), err error) {
	l, ok := conv.(Leaser)
	if !ok {
		return conv, func() {}, nil
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s@%s:%d:%d", who, host, os.Getpid(), holders.Add(1))
	poll, most := 10*time.Millisecond, min(ttl/4, time.Second)
	lease := func() (int64, string, error) {
		if t, ok := l.(LeaseTaker); ok {
			return t.LeaseFrom(ctx, holder, ttl)
		}
		token, err := l.Lease(ctx, holder, ttl)
		return token, "", err
	}
	for {
		sent := time.Now()
		token, ranOut, err := lease()
		if errors.Is(err, ErrUnsupported) {
			return conv, func() {}, nil
		}
		if err == nil {
			h := &Leased{Conversation: conv, l: l, token: token, holder: holder, ttl: ttl, tookFrom: ranOut, stop: make(chan struct{})}
			h.renewed.Store(int64(sent.Sub(start)))
			h.wg.Add(1)
			go h.renew()
			return h, h.release, nil
		}
		if !errors.Is(err, ErrLeaseHeld) {
			return nil, nil, err
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("waiting for the lease: %w (%v)", ctx.Err(), err)
		case <-t.C:
		}
		poll = min(2*poll, most)
	}
}

// start is this process's origin for monotonic times kept in atomics.
var start = time.Now()

// Leased is a conversation held under a lease: its appends carry the
// lease's token. It is safe for use by one goroutine at a time, as a
// Conversation is, while HoldLease's renewals run beside it.
type Leased struct {
	Conversation
	l        Leaser
	token    int64
	holder   string
	ttl      time.Duration
	tookFrom string

	renewed atomic.Int64 // when the last answered renewal was asked, since start
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Token returns the lease's fencing token.
func (h *Leased) Token() int64 { return h.token }

// TookOver returns the holder whose lease ran out and was taken for this
// one, when the store says so (LeaseTaker); "" when it was free, let go, or
// the store does not say.
func (h *Leased) TookOver() string { return h.tookFrom }

// Unwrap returns the conversation under the lease, to find its other
// abilities.
func (h *Leased) Unwrap() Conversation { return h.Conversation }

// Append appends carrying the lease's token; once the holder's own clock
// says the lease may have run out, it refuses without writing.
func (h *Leased) Append(ctx context.Context, seq int64, event []byte) error {
	if time.Since(start)-time.Duration(h.renewed.Load()) >= h.ttl {
		return fmt.Errorf("%w: %s has not renewed its lease for %v", ErrStaleLease, h.holder, h.ttl)
	}
	return h.l.AppendLeased(ctx, seq, event, h.token)
}

// renew renews the lease every ttl/3 until release, or until another holder
// has it.
func (h *Leased) renew() {
	defer h.wg.Done()
	tick := time.NewTicker(h.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		sent := time.Since(start)
		ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
		token, err := h.l.Lease(ctx, h.holder, h.ttl)
		cancel()
		switch {
		case err == nil && token == h.token:
			h.renewed.Store(int64(sent))
		case err == nil:
			// The lease had gone, and this renewal took it afresh under a new
			// token: this holder's appends carry the old one, so it cannot
			// use it. Let it go at once rather than make the next holder wait
			// out its time to live.
			ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
			h.l.Release(ctx, token)
			cancel()
			return
		case errors.Is(err, ErrLeaseHeld), errors.Is(err, ErrStaleLease):
			return // taken by another: appends will be refused
		}
	}
}

// release stops renewing and lets the lease go. It may be called more than
// once.
func (h *Leased) release() {
	h.once.Do(func() {
		close(h.stop)
		h.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.l.Release(ctx, h.token)
	})
}
