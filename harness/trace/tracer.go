package trace

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of the harness's spans.
const Scope = "lnk.dev/linkharness/harness/trace"

// Options are what New and FromProvider are handed beside the variables.
type Options struct {
	// Log gets each export that failed, at warning level; nil discards
	// them.
	Log *slog.Logger

	// Errors are sentinel errors whose text may stand as a failed span's
	// error.type: the first that a span's error wraps (errors.Is) names
	// it. Their text is fixed and says no more than what failed
	// ("model: stream stalled"), unlike an error's own text.
	Errors []error
}

// Tracer starts the spans of turns. A nil *Tracer is off: its calls, and
// the calls of the spans it returns, do nothing and allocate nothing. A
// Tracer is safe for concurrent use.
type Tracer struct {
	tracer oteltrace.Tracer
	errors []error
}

// New returns the Tracer the OTEL_* variables in getenv ask for, and the
// function that exports what is left and stops it, which main calls once
// no turn runs (it is bounded by its context). With tracing off (see the
// package's doc) the Tracer is nil and stopping it does nothing. getenv is
// os.Getenv in main; nothing else is read from the environment.
func New(getenv func(string) string, o Options) (*Tracer, func(context.Context) error, error) {
	s, err := read(getenv)
	if err != nil || !s.on {
		return nil, func(context.Context) error { return nil }, err
	}
	exp, err := exporter(s)
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(s.sampler),
		sdktrace.WithResource(ownResource(s)),
		sdktrace.WithRawSpanLimits(limits()),
		sdktrace.WithSpanProcessor(newBatcher(logged{exp, o.Log}, s.delay, s.export, s.queue, s.batch)),
	)
	stop := func(ctx context.Context) error {
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}
	return FromProvider(tp, o), stop, nil
}

// FromProvider returns a Tracer whose spans tp makes: a test's in-memory
// recorder, or a provider main built another way. o.Log is not used: the
// provider's exporter is its own.
func FromProvider(tp oteltrace.TracerProvider, o Options) *Tracer {
	return &Tracer{
		tracer: tp.Tracer(Scope, oteltrace.WithSchemaURL(semconv.SchemaURL)),
		errors: o.Errors,
	}
}

// exporter returns the OTLP/HTTP exporter s describes. Every option the
// exporter would otherwise take from the process's environment is given,
// so what getenv said is what it does.
func exporter(s settings) (sdktrace.SpanExporter, error) {
	comp := otlptracehttp.NoCompression
	if s.gzip {
		comp = otlptracehttp.GzipCompression
	}
	headers := s.headers
	if headers == nil {
		headers = map[string]string{}
	}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(s.url),
		otlptracehttp.WithHeaders(headers),
		otlptracehttp.WithTimeout(s.timeout),
		otlptracehttp.WithCompression(comp),
	}
	if s.ca != "" || s.cert != "" {
		cfg, err := tlsConfig(s)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithTLSClientConfig(cfg))
	}
	// New connects to nothing: the first export does.
	return otlptracehttp.New(context.Background(), opts...)
}

// tlsConfig returns the TLS configuration of s's certificate files.
func tlsConfig(s settings) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.ca != "" {
		pem, err := os.ReadFile(s.ca)
		if err != nil {
			return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_CERTIFICATE: %v", ErrSetting, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ErrSetting, s.ca)
		}
	}
	if s.cert != "" {
		pair, err := tls.LoadX509KeyPair(s.cert, s.key)
		if err != nil {
			return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: %v", ErrSetting, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// ownResource is the resource of every span: the SDK's own attributes,
// OTEL_RESOURCE_ATTRIBUTES, and service.name, which OTEL_SERVICE_NAME
// sets over both. It is built from s alone: resource.Default would read
// the process's environment.
func ownResource(s settings) *resource.Resource {
	attrs := make([]attribute.KeyValue, 0, len(s.resourceRaw)+1)
	for k, v := range s.resourceRaw {
		if attribute.Key(k) != semconv.ServiceNameKey {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	attrs = append(attrs, semconv.ServiceName(s.service))
	sdk, err := resource.New(context.Background(), resource.WithTelemetrySDK())
	if err != nil {
		sdk = resource.Empty()
	}
	// Merging with a resource of no schema cannot fail.
	r, _ := resource.Merge(sdk, resource.NewSchemaless(attrs...))
	return r
}

// limits are the SDK's default span limits, given rather than read from
// the OTEL_SPAN_* variables of the process's environment.
func limits() sdktrace.SpanLimits {
	return sdktrace.SpanLimits{
		AttributeValueLengthLimit:   sdktrace.DefaultAttributeValueLengthLimit,
		AttributeValueDepthLimit:    sdktrace.DefaultAttributeValueDepthLimit,
		AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
		EventCountLimit:             sdktrace.DefaultEventCountLimit,
		LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
		AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
		AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
	}
}

// logged is an exporter whose failures go to the harness's log rather than
// to the SDK's process-wide error handler, and are dropped there: spans
// are a view of the turn, and a collector that is down must not fill the
// queue with retries of old batches.
type logged struct {
	sdktrace.SpanExporter
	log *slog.Logger
}

func (l logged) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := l.SpanExporter.ExportSpans(ctx, spans)
	if err != nil && l.log != nil {
		l.log.Warn("trace: export failed", "spans", len(spans), "err", err)
	}
	return nil
}
