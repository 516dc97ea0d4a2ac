package trace

import (
	"context"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batcher is the span processor of New: it keeps ended spans and exports
// them in batches from one goroutine, woken when a batch is full or when
// the delay has passed since the first span of a batch, not at each span's
// end as the SDK's batch processor is, whose every span is a send on a
// channel its goroutine wakes for. A span that ends while the queue is
// full is dropped. It is safe for concurrent use.
type batcher struct {
	exp     sdktrace.SpanExporter
	delay   time.Duration // from a batch's first span to its export
	timeout time.Duration // one export's
	most    int           // the queue's length
	batch   int           // the most spans an export sends

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	timer   *time.Timer // armed while the queue holds a span
	armed   bool
	stopped bool

	sending sync.Mutex // one export at a time: an exporter need not take two at once

	wake chan struct{} // a full batch, or the delay passed
	done chan struct{} // closed by Shutdown
	gone chan struct{} // closed when the goroutine has returned
}

func newBatcher(exp sdktrace.SpanExporter, delay, timeout time.Duration, most, batch int) *batcher {
	b := &batcher{exp: exp, delay: delay, timeout: timeout, most: most, batch: min(batch, most),
		wake: make(chan struct{}, 1), done: make(chan struct{}), gone: make(chan struct{})}
	b.timer = time.AfterFunc(time.Hour, b.signal)
	b.timer.Stop()
	go b.run()
	return b
}

func (b *batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// OnStart implements sdktrace.SpanProcessor: nothing is done as a span
// starts.
func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: s joins the queue.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || len(b.queue) >= b.most {
		return
	}
	b.queue = append(b.queue, s)
	switch {
	case len(b.queue) >= b.batch:
		b.signal()
	case !b.armed:
		b.timer.Reset(b.delay)
		b.armed = true
	}
}

// run exports what the queue holds each time it is woken, until Shutdown.
func (b *batcher) run() {
	defer close(b.gone)
	for {
		select {
		case <-b.wake:
			b.export()
		case <-b.done:
			b.export()
			return
		}
	}
}

// export sends the queue's spans, a batch at a time.
func (b *batcher) export() {
	b.sending.Lock()
	defer b.sending.Unlock()
	b.mu.Lock()
	spans := b.queue
	b.queue = nil
	b.armed = false
	b.timer.Stop()
	b.mu.Unlock()
	for len(spans) > 0 {
		n := min(len(spans), b.batch)
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		_ = b.exp.ExportSpans(ctx, spans[:n]) // failures are logged by the exporter (logged)
		cancel()
		spans = spans[n:]
	}
}

// ForceFlush implements sdktrace.SpanProcessor: what the queue holds is
// exported before it returns, or ctx is done.
func (b *batcher) ForceFlush(ctx context.Context) error {
	flushed := make(chan struct{})
	go func() {
		b.export()
		close(flushed)
	}()
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown implements sdktrace.SpanProcessor: what the queue holds is
// exported, and the exporter is shut down.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.mu.Unlock()
	close(b.done)
	select {
	case <-b.gone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.exp.Shutdown(ctx)
}
