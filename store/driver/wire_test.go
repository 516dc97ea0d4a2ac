package driver

import (
	"errors"
	"fmt"
	"testing"

	"lnk.dev/linkharness/store"
)

// Each store sentinel crosses the protocol: the code a driver answers an
// error with is the one the client's CallError unwraps to the same sentinel.
func TestSentinelCodes(t *testing.T) {
	for _, want := range []error{
		store.ErrSeqTaken, store.ErrGap, store.ErrNotFound, store.ErrBadEvent, store.ErrCorrupt,
		store.ErrStaleLease, store.ErrLeaseHeld, store.ErrUnsupported, store.ErrBadName, store.ErrTooLarge,
		ErrTimeout,
	} {
		err := fmt.Errorf("sqlite: somewhere: %w", want)
		ce := &CallError{Driver: "lnk-test", Method: "m", Code: codeOf(err), Message: err.Error()}
		if !errors.Is(ce, want) {
			t.Errorf("%v: answered with code %d, read back as %v", want, ce.Code, errors.Unwrap(ce))
		}
	}
	// An event over the limit is a bad event first: its code says so.
	err := fmt.Errorf("%w: %w: 5 MB", store.ErrBadEvent, store.ErrTooLarge)
	if got := codeOf(err); got != codeBadEvent {
		t.Errorf("an event over the limit: code %d, want %d", got, codeBadEvent)
	}
}
