package trace

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// counting is an exporter that counts the spans it was sent.
type counting struct {
	mu    sync.Mutex
	spans int
	shut  bool
}

func (c *counting) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans += len(s)
	return nil
}

func (c *counting) Shutdown(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shut = true
	return nil
}

func (c *counting) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spans
}

// The batcher exports a full batch at once, a batch short of full once the
// delay has passed since its first span, and what is left at Shutdown; a
// span past the queue's length is dropped.
func TestBatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := &counting{}
		b := newBatcher(exp, time.Minute, time.Second, 5, 2)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
		tr := tp.Tracer("test")
		span := func(name string) {
			_, s := tr.Start(context.Background(), name)
			s.End()
		}
		exported := func() int {
			synctest.Wait()
			return exp.n()
		}
		span("a")
		if n := exported(); n != 0 {
			t.Fatalf("%d exported of a batch short of full, before the delay", n)
		}
		span("b")
		if n := exported(); n != 2 {
			t.Fatalf("%d exported of a full batch, want 2 at once", n)
		}
		span("c")
		time.Sleep(time.Minute)
		if n := exported(); n != 3 {
			t.Fatalf("%d exported once the delay passed, want 3", n)
		}
		// A full queue drops: the goroutine is kept from taking it by an
		// export the test holds.
		b.sending.Lock()
		for _, n := range []string{"d", "e", "f", "g", "h", "i", "j"} {
			span(n)
		}
		b.sending.Unlock()
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := exp.n(); n != 3+5 || !exp.shut {
			t.Errorf("%d exported after Shutdown, want 8: 5 of the 7 queued, 2 dropped; the exporter shut down %v", n, exp.shut)
		}
		span("late")
		if n := exported(); n != 8 {
			t.Errorf("a span after Shutdown exported")
		}
	})
}
