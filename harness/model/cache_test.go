package model

import (
	"strings"
	"testing"
)

// The system prompt's stable part is a block of its own with a breakpoint,
// the rest a second block with another, and the last message a third: the
// prompt is cached up to where it changed.
func TestAnthropicBreakpoints(t *testing.T) {
	system := "Base.\n\nWho you are.\n\n# Your notes\n- a"
	stable := len("Base.\n\nWho you are.")
	for _, tc := range []struct {
		name   string
		stable int
		want   string
	}{
		{"split", stable, `"system":[{"type":"text","text":"Base.\n\nWho you are.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"# Your notes\n- a","cache_control":{"type":"ephemeral"}}]`},
		{"none stable", 0, `"system":[{"type":"text","text":"Base.\n\nWho you are.\n\n# Your notes\n- a","cache_control":{"type":"ephemeral"}}]`},
		{"all stable", len(system), `"system":[{"type":"text","text":"Base.\n\nWho you are.\n\n# Your notes\n- a","cache_control":{"type":"ephemeral"}}]`},
		{"out of range", len(system) + 5, `"system":[{"type":"text","text":"Base.\n\nWho you are.\n\n# Your notes\n- a","cache_control":{"type":"ephemeral"}}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Model: "m", System: system, SystemStable: tc.stable, Messages: []Message{{Role: "user", Text: "hi"}}}
			b, err := appendAnthropicRequest(nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("body %s\nwant it to hold %s", b, tc.want)
			}
			if n := strings.Count(string(b), "cache_control"); n > 4 {
				t.Errorf("%d breakpoints, over Anthropic's 4", n)
			}
		})
	}
	// A stable part followed only by newlines is one block.
	req := &Request{Model: "m", System: "Base.\n\n", SystemStable: len("Base."), Messages: []Message{{Role: "user", Text: "hi"}}}
	b, _ := appendAnthropicRequest(nil, req)
	if strings.Count(string(b), `"type":"text"`) != 2 {
		t.Errorf("a stable part with nothing after it: %s", b)
	}
}

// The conversation's key goes before the messages, so the bytes before the
// newest message stay the same; no key, no field.
func TestPromptCacheKey(t *testing.T) {
	req := &Request{Model: "m", System: "S", CacheKey: "lnk-abc", Messages: []Message{{Role: "user", Text: "hi"}}}
	b, err := appendOpenAIRequest(nil, req, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"prompt_cache_key":"lnk-abc","messages":[`
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("body %s\nwant it to start %s", b, want)
	}
	req.CacheKey = ""
	b, _ = appendOpenAIRequest(nil, req, false)
	if strings.Contains(string(b), "prompt_cache_key") {
		t.Errorf("a key sent without one: %s", b)
	}
}

// A continuation keeps its request's breakpoint where it was: the summary
// asked after an answer is that request's bytes, less its closing, and
// more, with no breakpoint moved and none added.
func TestAnthropicContinuationKeepsBreakpoints(t *testing.T) {
	req := &Request{Model: "m", System: "S", Messages: []Message{{Role: "user", Text: "hi"}, {Role: "assistant", Text: "hello"}, {Role: "user", Text: "and?"}}}
	answer, err := appendAnthropicRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	more := *req
	more.Messages = append(append([]Message(nil), req.Messages...), Message{Role: "assistant", Text: "that"}, Message{Role: "user", Text: "now sum up"})
	more.CacheThrough = len(req.Messages)
	cont, err := appendAnthropicRequest(nil, &more)
	if err != nil {
		t.Fatal(err)
	}
	head := answer[:len(answer)-len("]}")]
	if !strings.HasPrefix(string(cont), string(head)) {
		t.Errorf("the continuation\n%s\ndoes not start with its request\n%s", cont, head)
	}
	if a, c := strings.Count(string(answer), "cache_control"), strings.Count(string(cont), "cache_control"); a != c {
		t.Errorf("%d breakpoints in the answer's request, %d in its continuation", a, c)
	}
	// Out of range, the last message holds it, as without.
	more.CacheThrough = 99
	b, _ := appendAnthropicRequest(nil, &more)
	if !strings.HasSuffix(string(b), `"now sum up","cache_control":{"type":"ephemeral"}}]}]}`) {
		t.Errorf("out of range: %s", b)
	}
}
