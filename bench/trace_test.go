package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkMessageCPUTraced is the server's CPU a message with traces off
// (no OTEL_* variable set) and on (OTEL_EXPORTER_OTLP_ENDPOINT naming a
// collector that takes every export and keeps nothing), a kept connection,
// the conversation begun empty: what a turn's spans, their batching and
// their export over OTLP/HTTP cost. A message's spans are a trace of its
// own (no caller's traceparent), every one sampled. exports/msg is how
// many OTLP requests the collector took a message: 0 off, and over 0 on,
// or the benchmark fails.
//
//	go test -run '^$' -bench MessageCPUTraced -benchtime 200x -count 10 ./bench
func BenchmarkMessageCPUTraced(b *testing.B) {
	_, link := build(b)
	var exports atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(collector.Close)
	for _, on := range []bool{false, true} {
		name := "trace=off"
		if on {
			name = "trace=on"
		}
		b.Run(name, func(b *testing.B) {
			if on {
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
				// Exported as a busy process would, in full batches,
				// not on the five-second timer.
				b.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")
			}
			exports.Store(0)
			s := serveWindow(b, link, 0, false)
			b.ReportAllocs()
			sendMeasured(b, s)
			// The spans still batched are exported when the process stops,
			// after the measure: count the exports made while it ran.
			n := exports.Load()
			if on && s.warmed+b.N > 512/4 && n == 0 {
				b.Fatalf("traces on, and %d messages exported nothing", s.warmed+b.N)
			}
			if !on && n != 0 {
				b.Fatalf("traces off, and %d exports", n)
			}
			b.ReportMetric(float64(n)/float64(s.warmed+b.N), "exports/msg")
		})
	}
}
