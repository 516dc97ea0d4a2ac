package turn

import (
	"sync/atomic"
	"time"
)

// Metrics counts an agent's turns. The zero value is ready to use; it is
// safe for concurrent use, and a nil *Metrics counts nothing.
type Metrics struct {
	Turns        atomic.Int64
	Errors       atomic.Int64
	TurnNanos    atomic.Int64 // wall time of every turn
	ModelNanos   atomic.Int64 // the model calls' share of it
	BytesRead    atomic.Int64 // event bytes read from the store
	BytesWritten atomic.Int64 // bytes written to the store and the copy
}

func (m *Metrics) turn(start, end time.Time, model time.Duration, read, written int64, err error) {
	if m == nil {
		return
	}
	m.Turns.Add(1)
	if err != nil {
		m.Errors.Add(1)
	}
	m.TurnNanos.Add(int64(end.Sub(start)))
	m.ModelNanos.Add(int64(model))
	m.BytesRead.Add(read)
	m.BytesWritten.Add(written)
}
