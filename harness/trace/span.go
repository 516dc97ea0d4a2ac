package trace

import (
	"context"
	"errors"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"

	"lnk.dev/linkharness/store/event"
)

// The harness's own attributes, beside the conventions' gen_ai ones.
const (
	// StoreKey is the way the conversation is kept: log, compact, or a
	// driver's name (sqlite, postgres …).
	StoreKey = attribute.Key("lnk.store")
	// SeqKey is the seq of the event a store span appended.
	SeqKey = attribute.Key("lnk.store.seq")
	// BytesKey is the size of the event a store span appended.
	BytesKey = attribute.Key("lnk.event.bytes")
	// SyncKey says whether the append made the event durable (and any
	// appended deferred before it) before it ended: its time holds the
	// sync. False for a message appended deferred, made durable by the
	// next append's sync.
	SyncKey = attribute.Key("lnk.store.sync")
)

// Who is what a turn's span says of whose turn it is.
type Who struct {
	Agent        string // the agent's name
	Conversation string // the thread
	Store        string // how the conversation is kept, named on its store spans
}

// Answer is what a chat span says of the model's answer: no text of it.
type Answer struct {
	Model  string      // the model that answered, as the provider named it
	Usage  event.Usage // as the model client normalized it
	Finish string      // why the answer stopped, in the provider's words: end_turn, tool_calls …
}

// Turn is the span of one turn, the parent of its chat, tool, store and
// summary spans. Its zero value, as a nil Tracer returns, does nothing. Its
// methods may be called from many goroutines (a round's tool calls), and
// End once all its children were started.
type Turn struct {
	t    *Tracer
	span oteltrace.Span
	who  Who
}

// Turn starts a turn's span, invoke_agent <agent>, continuing the trace of
// the caller's traceparent and tracestate in h (nil: none), else the span
// in ctx, else a new trace.
func (t *Tracer) Turn(ctx context.Context, h http.Header, who Who) Turn {
	if t == nil || t.tracer == nil {
		return Turn{}
	}
	if h != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
	}
	_, span := t.tracer.Start(ctx, "invoke_agent "+who.Agent,
		oteltrace.WithSpanKind(oteltrace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(who.Agent))
		if who.Conversation != "" {
			span.SetAttributes(semconv.GenAIConversationID(who.Conversation))
		}
	}
	return Turn{t: t, span: span, who: who}
}

// Context returns ctx carrying the turn's span, for what propagates a
// trace further (an outgoing request's traceparent); off, ctx itself.
func (tu Turn) Context(ctx context.Context) context.Context {
	if tu.span == nil {
		return ctx
	}
	return oteltrace.ContextWithSpan(ctx, tu.span)
}

// TraceID is the turn's trace id in hex; off, "".
func (tu Turn) TraceID() string {
	if tu.span == nil {
		return ""
	}
	return tu.span.SpanContext().TraceID().String()
}

// End ends the turn's span; err, when not nil, marks it failed.
func (tu Turn) End(err error) { end(tu.t, tu.span, err) }

// SetStore says how the conversation is kept, once the turn has opened it:
// its store spans from then on name it. Off, it does nothing.
func (tu *Turn) SetStore(store string) {
	if tu.span == nil || tu.who.Store == store {
		return
	}
	tu.who.Store = store
	if tu.span.IsRecording() {
		tu.span.SetAttributes(StoreKey.String(store))
	}
}

// Chat starts the span of a model call, chat <model>, made to provider
// ("anthropic", "openai", "openrouter", "ollama").
func (tu Turn) Chat(provider, model string) Chat { return chat(tu.t, tu.span, provider, model) }

// Tool starts the span of a tool call, execute_tool <name>, the call's id
// as the model gave it.
func (tu Turn) Tool(name, callID string) Tool {
	if !live(tu.span) {
		return Tool{}
	}
	span := child(tu.t, tu.span, "execute_tool "+name, oteltrace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(name),
			semconv.GenAIToolCallID(callID),
		)
	}
	return Tool{t: tu.t, span: span}
}

// Append starts the span of one event's append to the store, append
// <store>: its seq, its size in bytes, and whether the append synced it.
func (tu Turn) Append(seq int64, bytes int, sync bool) Store {
	return appendSpan(tu.t, tu.span, tu.who.Store, seq, bytes, sync)
}

// Summary starts the span of the turn's summary, summarize <agent>, the
// parent of the summary's chat and append.
func (tu Turn) Summary() Summary {
	if !live(tu.span) {
		return Summary{}
	}
	span := child(tu.t, tu.span, "summarize "+tu.who.Agent, oteltrace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIAgentName(tu.who.Agent),
			semconv.GenAIConversationID(tu.who.Conversation),
		)
	}
	return Summary{t: tu.t, span: span, store: tu.who.Store}
}

// On says whether the summary's span is open: its children go under it.
func (s Summary) On() bool { return s.span != nil }

// Summary is the span of a summary. Its zero value does nothing.
type Summary struct {
	t     *Tracer
	span  oteltrace.Span
	store string
}

// Chat starts the span of the summary's model call, as Turn.Chat.
func (s Summary) Chat(provider, model string) Chat { return chat(s.t, s.span, provider, model) }

// Append starts the span of the summary's append, as Turn.Append.
func (s Summary) Append(seq int64, bytes int, sync bool) Store {
	return appendSpan(s.t, s.span, s.store, seq, bytes, sync)
}

// End ends the summary's span; err, when not nil, marks it failed.
func (s Summary) End(err error) { end(s.t, s.span, err) }

// Chat is the span of a model call. Its zero value does nothing.
type Chat struct {
	t    *Tracer
	span oteltrace.Span
}

// End ends the model call's span with what the answer said of itself;
// err, when not nil, marks it failed (a is then what came before it
// failed, often nothing).
func (c Chat) End(a Answer, err error) {
	if c.span == nil {
		return
	}
	if c.span.IsRecording() {
		c.answered(a)
	}
	end(c.t, c.span, err)
}

// answered sets what a says, leaving out what it does not (a call that
// failed before its answer).
func (c Chat) answered(a Answer) {
	if a.Model != "" {
		c.span.SetAttributes(semconv.GenAIResponseModel(a.Model))
	}
	if u := a.Usage; u != (event.Usage{}) {
		c.span.SetAttributes(
			// The conventions count the cache's tokens in the input;
			// event.Usage keeps them apart.
			semconv.GenAIUsageInputTokens(int(u.Input+u.CacheRead+u.CacheWrite)),
			semconv.GenAIUsageOutputTokens(int(u.Output)),
			semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)),
			semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)),
		)
	}
	if a.Finish != "" {
		c.span.SetAttributes(semconv.GenAIResponseFinishReasons(a.Finish))
	}
}

// Tool is the span of a tool call. Its zero value does nothing.
type Tool struct {
	t    *Tracer
	span oteltrace.Span
}

// End ends the tool call's span; err, when not nil, marks it failed: the
// call failed, or the tool answered with an error.
func (tl Tool) End(err error) { end(tl.t, tl.span, err) }

// Store is the span of a store's append. Its zero value does nothing.
type Store struct {
	t    *Tracer
	span oteltrace.Span
}

// End ends the store's span; err, when not nil, marks it failed.
func (st Store) End(err error) { end(st.t, st.span, err) }

// live tells a parent whose children are recorded: not off, and not
// sampled out, since a child of a span that is not kept would be kept
// without its parent.
func live(parent oteltrace.Span) bool { return parent != nil && parent.IsRecording() }

// child starts a span named name under parent, which is live. Callers
// check that first, since making a span's name allocates.
func child(t *Tracer, parent oteltrace.Span, name string, kind oteltrace.SpanKind) oteltrace.Span {
	ctx := oteltrace.ContextWithSpan(context.Background(), parent)
	_, span := t.tracer.Start(ctx, name, oteltrace.WithSpanKind(kind))
	return span
}

func chat(t *Tracer, parent oteltrace.Span, provider, model string) Chat {
	if !live(parent) {
		return Chat{}
	}
	span := child(t, parent, "chat "+model, oteltrace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(
			semconv.GenAIOperationNameChat,
			semconv.GenAIProviderNameKey.String(provider),
			semconv.GenAIRequestModel(model),
		)
	}
	return Chat{t: t, span: span}
}

func appendSpan(t *Tracer, parent oteltrace.Span, store string, seq int64, bytes int, sync bool) Store {
	if !live(parent) {
		return Store{}
	}
	span := child(t, parent, "append "+store, oteltrace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(StoreKey.String(store), SeqKey.Int64(seq), BytesKey.Int(bytes), SyncKey.Bool(sync))
	}
	return Store{t: t, span: span}
}

// end ends span, marking it failed with err's error.type when err is not
// nil.
func end(t *Tracer, span oteltrace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, "")
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err, t.errors)))
	}
	span.End()
}

// errorType is err's error.type: "canceled" or "timeout" for the context's
// errors, else the text of the first of known that err wraps, else
// "_OTHER". err's own text is never used: it may quote what a provider or
// tool was sent.
func errorType(err error, known []error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	for _, k := range known {
		if errors.Is(err, k) {
			return k.Error()
		}
	}
	return "_OTHER"
}
