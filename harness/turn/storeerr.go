package turn

import (
	"errors"

	"lnk.dev/linkharness/store"
)

// storeOpened notes how opening a conversation went, for StoreErr: an
// error opening the store, or none. A conversation that is not there, or a
// bad name, says nothing of the store.
func (r *Runner) storeOpened(err error) {
	switch {
	case err == nil:
		if r.storeErr.Load() != nil {
			r.storeErr.Store(nil)
		}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrBadName):
	default:
		r.storeErr.Store(&err)
	}
}

// StoreErr is why the last turn could not open its conversation's store,
// until a turn opens one again: nil while the store opens.
func (r *Runner) StoreErr() error {
	if p := r.storeErr.Load(); p != nil {
		return *p
	}
	return nil
}
