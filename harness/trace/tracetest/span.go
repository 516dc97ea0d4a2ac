package tracetest

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"lnk.dev/linkharness/harness/trace"
)

// Span is one span as a test reads it back.
type Span struct {
	TraceID string // hex
	ID      string // hex
	Parent  string // the parent span's id in hex; "" for a root
	Name    string
	Kind    string            // server, client, internal
	Attrs   map[string]string // each attribute's value as text; a list as JSON
	Error   bool              // its status is Error
	State   string            // the W3C tracestate it carries
}

// Memory returns a Tracer of o that samples every trace whose caller did
// not sample it out and keeps its spans in memory, and the function that
// returns the spans ended so far, in the order they ended.
func Memory(o trace.Options) (*trace.Tracer, func() []Span) {
	rec := &recorder{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithSpanProcessor(rec),
	)
	return trace.FromProvider(tp, o), rec.spans
}

// recorder keeps the spans that ended. It is safe for concurrent use.
type recorder struct {
	mu    sync.Mutex
	ended []Span
}

func (r *recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *recorder) Shutdown(context.Context) error                  { return nil }
func (r *recorder) ForceFlush(context.Context) error                { return nil }

func (r *recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	sp := Span{
		TraceID: s.SpanContext().TraceID().String(),
		ID:      s.SpanContext().SpanID().String(),
		Name:    s.Name(),
		Kind:    s.SpanKind().String(),
		Attrs:   make(map[string]string, len(s.Attributes())),
		Error:   s.Status().Code == codes.Error,
		State:   s.SpanContext().TraceState().String(),
	}
	if p := s.Parent(); p.IsValid() {
		sp.Parent = p.SpanID().String()
	}
	for _, kv := range s.Attributes() {
		sp.Attrs[string(kv.Key)] = kv.Value.String()
	}
	r.mu.Lock()
	r.ended = append(r.ended, sp)
	r.mu.Unlock()
}

func (r *recorder) spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.ended...)
}
