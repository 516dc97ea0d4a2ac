package model

import (
	"fmt"
	"strings"
	"testing"

	"lnk.dev/linkharness/store/event"
)

// The body is made at its size: the estimate holds every provider's body
// of an ordinary request and is not far over it.
func TestBodySize(t *testing.T) {
	rich := &Request{
		Model:    "anthropic/claude-opus-5-5",
		System:   strings.Repeat("You are terse. Answer in \"one\" line.\n", 40),
		CacheKey: "lnk-0123456789abcdef",
		Tools:    []Tool{weatherTool, {Name: "clock__now"}},
		Messages: []Message{
			{Role: "user", Text: "[Mon 2026-12-02 10:45 UTC, Ann]\nWhat is the weather in Zürich ✓?"},
			{Role: "assistant", Text: "Looking.", Thinking: []byte(`[{"thinking":"The user wants \"weather\".","signature":"c2lnbmF0dXJl"}]`),
				Calls: []event.Call{{ID: "toolu_01", Name: "weather__now", Args: []byte(`{"city":"Zürich","units":"metric","days":[1,2,3]}`)}}},
			{Role: "user", Results: []Result{{CallID: "toolu_01", Name: "weather__now", Text: "{\"temp\": -2,\n \"sky\": \"snow\"}"}}},
			{Role: "assistant", Text: "Cold: -2 °C and snow."},
		},
	}
	long := &Request{Model: "openai/gpt-6", System: "S"}
	for i := range 200 {
		long.Messages = append(long.Messages,
			Message{Role: "user", Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("words ", 40))},
			Message{Role: "assistant", Text: fmt.Sprintf("answer %d: %s", i, strings.Repeat("reply\n", 30))})
	}
	for name, req := range map[string]*Request{"rich": rich, "long": long} {
		for _, enc := range []struct {
			provider string
			encode   func([]byte, *Request) ([]byte, error)
		}{
			{"anthropic", appendAnthropicRequest},
			{"ollama", appendOllamaRequest},
			{"openai", func(b []byte, r *Request) ([]byte, error) { return appendOpenAIRequest(b, r, false) }},
			{"openrouter", func(b []byte, r *Request) ([]byte, error) { return appendOpenAIRequest(b, r, true) }},
		} {
			body, err := enc.encode(nil, req)
			if err != nil {
				t.Fatal(err)
			}
			if est := bodySize(req, ""); est < len(body) || est > 2*len(body)+2048 {
				t.Errorf("%s for %s: %d bytes estimated for a body of %d", name, enc.provider, est, len(body))
			}
		}
	}
}
