package trace_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/harness/trace/tracetest"
	"lnk.dev/linkharness/store/event"
)

// The caller's span, as a W3C traceparent, and its tracestate.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	traceparent = "00-" + callerTrace + "-" + callerSpan + "-01"
	tracestate  = "vendor=opaque"
)

// secret is what a turn is handed that no span may hold: the message's
// text, a tool call's arguments and result, the agent's key, the model's
// thinking.
var secret = []string{
	"the user's message: my card is 4111 1111 1111 1111",
	`{"path":"notes/diary.md"}`,
	"the tool's answer: dear diary",
	"lnk_key_0123456789abcdef",
	"the model's thinking: be kind",
	"the model's answer: done",
}

var errStalled = errors.New("model: stream stalled")

// aTurn makes the spans of one turn as the turn will: its message appended,
// a model call asking for a tool, the tool's call and result, a second model
// call and its answer appended, and a summary. What the
// turn knows that no span may hold (secret) is right beside each call, as
// it is in the turn's own code.
func aTurn(tr *trace.Tracer, h http.Header) (turnTrace string) {
	message, args, result, key, thinking, answer := secret[0], secret[1], secret[2], secret[3], secret[4], secret[5]
	h.Set("Authorization", "Bearer "+key)
	tu := tr.Turn(context.Background(), h, trace.Who{Agent: "ada", Conversation: "chat:1", Store: "log"})
	st := tu.Append(1, len(message), false)
	st.End(nil)

	c := tu.Chat("anthropic", "claude-sonnet-4-5")
	_ = thinking
	c.End(trace.Answer{Model: "claude-sonnet-4-5-20250929", Usage: event.Usage{Input: 100, Output: 20, CacheRead: 900, CacheWrite: 50}, Finish: "tool_use"}, nil)

	tl := tu.Tool("memory__search", "toolu_01")
	_ = args
	tl.End(nil)
	tu.Append(2, len(result), true).End(nil)

	c = tu.Chat("anthropic", "claude-sonnet-4-5")
	c.End(trace.Answer{Model: "claude-sonnet-4-5-20250929", Usage: event.Usage{Input: 10, Output: 5, CacheRead: 1000}, Finish: "end_turn"}, nil)
	tu.Append(3, len(answer), true).End(nil)

	sm := tu.Summary()
	sc := sm.Chat("anthropic", "claude-sonnet-4-5")
	sc.End(trace.Answer{}, fmt.Errorf("%w: after 60s: %s", errStalled, message))
	sm.Append(4, 120, true).End(nil)
	sm.End(errStalled)

	tu.End(nil)
	return tu.TraceID()
}

// callerHeader is a request's headers carrying the caller's trace.
func callerHeader() http.Header {
	h := http.Header{}
	h.Set("Traceparent", traceparent)
	h.Set("Tracestate", tracestate)
	return h
}

// checkTree checks the spans of aTurn: one tree under the caller's span,
// each span's parent, kind and attributes.
func checkTree(t *testing.T, spans []tracetest.Span) {
	t.Helper()
	byName := map[string][]tracetest.Span{}
	for _, s := range spans {
		if s.TraceID != callerTrace || s.State != tracestate {
			t.Errorf("span %s in trace %s state %q, not the caller's %s %q", s.Name, s.TraceID, s.State, callerTrace, tracestate)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	one := func(name string) tracetest.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans %q, want 1; all: %v", len(byName[name]), name, names(spans))
		}
		return byName[name][0]
	}
	turn := one("invoke_agent ada")
	if turn.Parent != callerSpan || turn.Kind != "server" {
		t.Errorf("turn's parent %q kind %q, want the caller's %s, server", turn.Parent, turn.Kind, callerSpan)
	}
	want(t, turn, map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "ada", "gen_ai.conversation.id": "chat:1",
	})
	chats := byName["chat claude-sonnet-4-5"]
	if len(spans) != 10 || len(chats) != 3 || len(byName["append log"]) != 4 {
		t.Fatalf("spans %v, want 10: the turn, 3 chats, 4 appends, a tool, a summary", names(spans))
	}
	summary := one("summarize ada")
	for _, s := range spans {
		parent := turn.ID
		if s.Name == "chat claude-sonnet-4-5" && s.Attrs["gen_ai.response.finish_reasons"] == "" ||
			s.Name == "append log" && s.Attrs["lnk.store.seq"] == "4" {
			parent = summary.ID
		}
		if s.ID != turn.ID && s.Parent != parent {
			t.Errorf("span %s's parent %s, want %s", s.Name, s.Parent, parent)
		}
	}
	var first tracetest.Span
	for _, c := range chats {
		if c.Attrs["gen_ai.response.finish_reasons"] == `["tool_use"]` {
			first = c
		}
	}
	if first.Kind != "client" {
		t.Errorf("chat's kind %q, want client", first.Kind)
	}
	want(t, first, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
		"gen_ai.request.model": "claude-sonnet-4-5", "gen_ai.response.model": "claude-sonnet-4-5-20250929",
		"gen_ai.usage.input_tokens": "1050", "gen_ai.usage.output_tokens": "20",
		"gen_ai.usage.cache_read.input_tokens": "900", "gen_ai.usage.cache_creation.input_tokens": "50",
		"gen_ai.response.finish_reasons": `["tool_use"]`,
	})
	tool := one("execute_tool memory__search")
	want(t, tool, map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "memory__search", "gen_ai.tool.call.id": "toolu_01",
	})
	for _, s := range byName["append log"] {
		if s.Attrs["lnk.store"] != "log" || s.Attrs["lnk.store.seq"] == "" || s.Attrs["lnk.event.bytes"] == "" {
			t.Errorf("append %v lacks its store, seq or bytes", s.Attrs)
		}
	}
	for _, s := range byName["append log"] {
		if sync := s.Attrs["lnk.store.sync"]; sync != strconv.FormatBool(s.Attrs["lnk.store.seq"] != "1") {
			t.Errorf("append of seq %s: lnk.store.sync %q; the message's is deferred, the others synced", s.Attrs["lnk.store.seq"], sync)
		}
	}
	for _, c := range chats {
		if c.Parent == summary.ID && (!c.Error || c.Attrs["gen_ai.usage.input_tokens"] != "" || c.Attrs["gen_ai.response.model"] != "") {
			t.Errorf("the summary's chat, which failed: error %v, attributes %v; want failed, no usage or model", c.Error, c.Attrs)
		}
	}
	if !summary.Error || summary.Attrs["error.type"] != "_OTHER" {
		t.Errorf("summary error %v type %q, want failed, _OTHER (no known errors given)", summary.Error, summary.Attrs["error.type"])
	}
	if turn.Error || tool.Error {
		t.Errorf("turn or tool failed, want neither")
	}
	for _, s := range spans {
		for k, v := range s.Attrs {
			for _, x := range secret {
				if strings.Contains(v, x) {
					t.Errorf("span %s attribute %s = %q holds what no span may: %q", s.Name, k, v, x)
				}
			}
		}
	}
}

// want checks that s has each of attrs.
func want(t *testing.T, s tracetest.Span, attrs map[string]string) {
	t.Helper()
	for k, v := range attrs {
		if s.Attrs[k] != v {
			t.Errorf("span %s: %s = %q, want %q (all: %v)", s.Name, k, s.Attrs[k], v, s.Attrs)
		}
	}
}

func names(spans []tracetest.Span) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

func TestTurnTree(t *testing.T) {
	tr, spans := tracetest.Memory(trace.Options{})
	if id := aTurn(tr, callerHeader()); id != callerTrace {
		t.Errorf("turn's trace %s, want the caller's %s", id, callerTrace)
	}
	checkTree(t, spans())
}

func TestTurnWithoutCaller(t *testing.T) {
	tr, spans := tracetest.Memory(trace.Options{})
	tu := tr.Turn(context.Background(), http.Header{}, trace.Who{Agent: "ada"})
	tu.End(nil)
	got := spans()
	if len(got) != 1 || got[0].Parent != "" || got[0].TraceID == callerTrace {
		t.Fatalf("spans %+v, want one root of a new trace", got)
	}
}

// A caller that sampled its trace out keeps the turn's spans out too.
func TestCallerSampledOut(t *testing.T) {
	tr, spans := tracetest.Memory(trace.Options{})
	h := http.Header{}
	h.Set("Traceparent", "00-"+callerTrace+"-"+callerSpan+"-00")
	aTurn(tr, h)
	if got := spans(); len(got) != 0 {
		t.Fatalf("%d spans of a trace the caller sampled out, want none", len(got))
	}
}

func TestErrorType(t *testing.T) {
	errCut := errors.New("model: stream cut off")
	cases := []struct {
		err  error
		want string
	}{
		{context.Canceled, "canceled"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("%w: after 12 bytes: secret text", errCut), "model: stream cut off"},
		{fmt.Errorf("%w: provider said: secret text", errStalled), "model: stream stalled"},
		{errors.New("secret text"), "_OTHER"},
	}
	for _, c := range cases {
		mem, spans := tracetest.Memory(trace.Options{Errors: []error{errCut, errStalled}})
		tu := mem.Turn(context.Background(), nil, trace.Who{Agent: "ada"})
		tu.End(c.err)
		got := spans()[0]
		if !got.Error || got.Attrs["error.type"] != c.want {
			t.Errorf("%v: error %v type %q, want %q", c.err, got.Error, got.Attrs["error.type"], c.want)
		}
	}
}
