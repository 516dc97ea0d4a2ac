package trace_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/store/event"
)

// With no OTEL_* variable, New's Tracer is off: every call of a turn's
// spans, as the turn makes them, allocates nothing.
func TestOffAllocs(t *testing.T) {
	tr, stop, err := trace.New(trace.Env(), trace.Options{})
	if err != nil || tr != nil {
		t.Fatalf("New without variables: %v, %v; want an off (nil) Tracer", tr, err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := callerHeader()
	who := trace.Who{Agent: "ada", Conversation: "chat:1", Store: "log"}
	a := trace.Answer{Model: "m", Usage: event.Usage{Input: 1}, Finish: "stop"}
	failed := errors.New("failed")
	for _, tr := range []*trace.Tracer{nil, {}} {
		allocs := testing.AllocsPerRun(100, func() {
			tu := tr.Turn(ctx, h, who)
			_ = tu.Context(ctx)
			_ = tu.TraceID()
			tu.Append(1, 10, false).End(nil)
			tu.Chat("anthropic", "m").End(a, nil)
			tu.Tool("t", "id").End(failed)
			sm := tu.Summary()
			sm.Chat("anthropic", "m").End(a, failed)
			sm.Append(2, 10, true).End(nil)
			sm.End(nil)
			tu.End(failed)
		})
		if allocs != 0 {
			t.Errorf("Tracer %v off: %v allocations a turn, want 0", tr, allocs)
		}
	}
}

// With an endpoint, New exports over OTLP/HTTP as the variables say: the
// URL, the headers, gzip, the service's name; and its stop sends what is
// left.
func TestNewExports(t *testing.T) {
	type post struct {
		path, auth, encoding string
		req                  *coltrace.ExportTraceServiceRequest
	}
	posts := make(chan post, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		req := &coltrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Errorf("export body: %v", err)
		}
		posts <- post{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Encoding"), req}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tr, stop, err := trace.New(trace.Env(
		"OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL+"/otlp",
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20collector-key",
		"OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
		"OTEL_SERVICE_NAME=harness-a",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test",
	), trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tu := tr.Turn(context.Background(), callerHeader(), trace.Who{Agent: "ada"})
	tu.Chat("openai", "gpt-5").End(trace.Answer{Model: "gpt-5"}, nil)
	tu.End(nil)
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := <-posts
	if p.path != "/otlp/v1/traces" || p.auth != "Bearer collector-key" || p.encoding != "gzip" {
		t.Errorf("posted to %s with Authorization %q, encoding %q", p.path, p.auth, p.encoding)
	}
	rs := p.req.GetResourceSpans()
	if len(rs) != 1 {
		t.Fatalf("%d resources, want 1", len(rs))
	}
	res := map[string]string{}
	for _, kv := range rs[0].GetResource().GetAttributes() {
		res[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	if res["service.name"] != "harness-a" || res["deployment.environment.name"] != "test" || res["telemetry.sdk.language"] != "go" {
		t.Errorf("resource %v", res)
	}
	var names []string
	for _, ss := range rs[0].GetScopeSpans() {
		if ss.GetScope().GetName() != trace.Scope {
			t.Errorf("scope %q, want %q", ss.GetScope().GetName(), trace.Scope)
		}
		for _, s := range ss.GetSpans() {
			names = append(names, s.GetName())
		}
	}
	if strings.Join(names, ",") != "chat gpt-5,invoke_agent ada" {
		t.Errorf("spans %v", names)
	}
}

// An export that fails is logged and dropped: stopping does not fail for
// it, and the turn never waited on it.
func TestNewExportFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	var log strings.Builder
	tr, stop, err := trace.New(trace.Env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+srv.URL+"/v1/traces"),
		trace.Options{Log: newLogger(&log)})
	if err != nil {
		t.Fatal(err)
	}
	tr.Turn(context.Background(), nil, trace.Who{Agent: "ada"}).End(nil)
	if err := stop(context.Background()); err != nil {
		t.Fatalf("stop: %v, want nil: a failed export is logged", err)
	}
	if !strings.Contains(log.String(), "trace: export failed") {
		t.Errorf("log %q, want the failed export", log.String())
	}
}

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
