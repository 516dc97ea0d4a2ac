package trace_test

import (
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/store/event"
)

// BenchmarkTurnSpans is what a turn's spans cost the turn: a turn with a
// tool call (its message, two model calls, the tool, its result and the
// answer appended), off and on, the spans batched to an exporter
// that keeps nothing, as the OTLP exporter's goroutine would take them.
func BenchmarkTurnSpans(b *testing.B) {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		tr   *trace.Tracer
	}{{"off", nil}, {"on", trace.FromProvider(tp, trace.Options{})}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx, h := context.Background(), callerHeader()
			who := trace.Who{Agent: "ada", Conversation: "chat:1", Store: "log"}
			a := trace.Answer{Model: "claude-sonnet-4-5-20250929", Usage: event.Usage{Input: 10, Output: 5, CacheRead: 1000}, Finish: "end_turn"}
			for b.Loop() {
				spansOfTurn(ctx, c.tr, h, who, a)
			}
		})
	}
}

func spansOfTurn(ctx context.Context, tr *trace.Tracer, h http.Header, who trace.Who, a trace.Answer) {
	tu := tr.Turn(ctx, h, who)
	tu.Append(1, 100, false).End(nil)
	tu.Chat("anthropic", "claude-sonnet-4-5").End(a, nil)
	tu.Tool("memory__search", "toolu_01").End(nil)
	tu.Append(2, 100, true).End(nil)
	tu.Chat("anthropic", "claude-sonnet-4-5").End(a, nil)
	tu.Append(3, 100, true).End(nil)
	tu.End(nil)
}
