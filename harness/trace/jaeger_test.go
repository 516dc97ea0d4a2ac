package trace_test

import (
	"context"
	"testing"

	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/harness/trace/tracetest"
)

// A turn's spans, exported over OTLP/HTTP by New as the OTEL_* variables
// say, read back from Jaeger by the caller's trace id: one tree under the
// caller's span, with the GenAI attributes, and no text of the turn's.
func TestJaeger(t *testing.T) {
	j := tracetest.StartJaeger(t)
	tr, stop, err := trace.New(trace.Env(
		"OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLP,
		"OTEL_SERVICE_NAME=lnk-link-harness-test",
	), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if id := aTurn(tr, callerHeader()); id != callerTrace {
		t.Errorf("turn's trace %s, want the caller's %s", id, callerTrace)
	}
	// Jaeger stores a batch before it answers the export (no queue, no
	// batch processor: tools/jaeger/jaeger.yaml), so the trace is there
	// once stop has flushed it.
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkTree(t, j.Trace(t, callerTrace))
}
