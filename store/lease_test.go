package store

import (
	"context"
	"sync"
	"testing"
	"time"
)

// lapsing is a conversation whose lease lapses after its first grant: the
// next renewal is granted afresh under a new token, as a store does when a
// holder's renewal arrives after its lease ran out.
type lapsing struct {
	mu       sync.Mutex
	token    int64
	released []int64
	// releasedOne is closed at the first Release.
	releasedOne chan struct{}
}

func (l *lapsing) Last(context.Context) (int64, error)                               { return 0, nil }
func (l *lapsing) Append(context.Context, int64, []byte) error                       { return nil }
func (l *lapsing) Read(context.Context, int64, bool, func(int64, []byte) bool) error { return nil }
func (l *lapsing) Close() error                                                      { return nil }
func (l *lapsing) AppendLeased(context.Context, int64, []byte, int64) error          { return nil }

func (l *lapsing) Lease(context.Context, string, time.Duration) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.token++
	return l.token, nil
}

func (l *lapsing) Release(_ context.Context, token int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = append(l.released, token)
	if len(l.released) == 1 {
		close(l.releasedOne)
	}
	return nil
}

// A holder whose renewal took the lease afresh lets the new one go at
// once, so the next holder need not wait out its time to live.
func TestRenewalAfterLapseReleases(t *testing.T) {
	l := &lapsing{releasedOne: make(chan struct{})}
	held, release, err := HoldLease(context.Background(), l, "test", 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if held.(*Leased).Token() != 1 { // the first grant
		t.Fatalf("token %d", held.(*Leased).Token())
	}
	<-l.releasedOne // the first renewal found the lease gone and let it go
	release()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.released) < 1 || l.released[0] != 2 {
		t.Fatalf("released %v; want the renewal's token 2 let go first", l.released)
	}
}
