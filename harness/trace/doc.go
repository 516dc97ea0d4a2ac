// Package trace holds a turn's spans: OpenTelemetry traces with its GenAI
// semantic conventions (semconv 1.41, the last release to carry the gen_ai
// attributes), exported over OTLP/HTTP, so a slow turn can be followed
// through its model calls, tool calls and store writes, and a caller's
// trace goes on through the harness.
//
// A turn's spans make one tree, under the caller's span when the request
// carried a W3C traceparent (and tracestate):
//
//	invoke_agent <agent>       SERVER    the turn: gen_ai.agent.name, gen_ai.conversation.id
//	├── append <store>         INTERNAL  a store's append: lnk.store, lnk.store.seq, lnk.event.bytes,
//	│                                    lnk.store.sync (whether its time holds the sync that made it durable)
//	├── chat <model>           CLIENT    a model call: gen_ai.provider.name, gen_ai.request.model,
//	│                                    gen_ai.response.model, gen_ai.usage.*, gen_ai.response.finish_reasons
//	├── execute_tool <tool>    INTERNAL  a tool call: gen_ai.tool.name, gen_ai.tool.call.id
//	└── summarize <agent>      INTERNAL  a summary: its own chat and append below it
//
// The turn's span is SERVER, not the INTERNAL of the conventions' in-process
// invoke_agent: it is the harness's side of the caller's request, and no
// HTTP server span stands between the two. Every span that failed has
// status Error and error.type: "canceled" or "timeout" for the context's
// errors, the text of one of Options.Errors (sentinels, whose text is
// fixed) that the error wraps, else "_OTHER". An error's own text is never
// kept, since a provider's or a tool's message may quote what it was sent.
//
// What a span never holds: a message's text, a tool call's arguments or
// result, a model's thinking, a key, a request's headers. The API takes
// none of them: names, ids, counts and the provider's words for why an
// answer stopped are all it is handed.
//
// New reads only the standard OTEL_* variables, through the getenv main
// hands it, never the process's environment. With none of
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_TRACES_EXPORTER set (or OTEL_TRACES_EXPORTER=none, or
// OTEL_SDK_DISABLED=true), nothing is exported and the Tracer is off: a
// nil *Tracer, whose every call, and every call on the spans it returns,
// does nothing and allocates nothing. What New reads:
//
//	OTEL_SDK_DISABLED                        true: off
//	OTEL_TRACES_EXPORTER                     otlp (the default once an endpoint is set) or none
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT       the URL spans are posted to, as it is
//	OTEL_EXPORTER_OTLP_ENDPOINT              the collector's base URL; /v1/traces is added
//	                                         (neither set: http://localhost:4318/v1/traces)
//	OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL     http/protobuf only
//	OTEL_EXPORTER_OTLP_[TRACES_]HEADERS      k=v,k2=v2, values percent-encoded
//	OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT      milliseconds an export may take (10000)
//	OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION  gzip or none
//	OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE  PEM file of the CAs the collector is checked against
//	OTEL_EXPORTER_OTLP_[TRACES_]CLIENT_CERTIFICATE, _CLIENT_KEY  PEM files of the harness's own
//	OTEL_TRACES_SAMPLER, _ARG                always_on, always_off, traceidratio and their
//	                                         parentbased_ forms (parentbased_always_on)
//	OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT, OTEL_BSP_MAX_QUEUE_SIZE,
//	OTEL_BSP_MAX_EXPORT_BATCH_SIZE           the batch processor
//	OTEL_SERVICE_NAME                        service.name (ServiceName when not set)
//	OTEL_RESOURCE_ATTRIBUTES                 k=v,k2=v2 on every span's resource
//
// A value New cannot use is an error (ErrSetting, ErrUnsupported) rather
// than a silent default, so a mistyped setting is found at start. Spans
// are exported in batches from a goroutine of the SDK; an export that fails
// is logged to Options.Log and dropped, never retried past the exporter's
// own retries, and never slows a turn.
package trace
