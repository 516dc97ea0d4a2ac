package scripted

import (
	"encoding/json"
	"strings"
	"testing"
)

// With a cache, a request that repeats the start of the one before reports
// that start as read from the cache: in whole 128-token blocks in OpenAI's
// format, per conversation; in Anthropic's, up to the last breakpoint the
// repeat reaches, with what is marked past it written.
func TestPromptCache(t *testing.T) {
	_, base := listen(t, &Script{Cache: true})
	long := strings.Repeat("the same words again ", 100) // 2,100 bytes
	openAI := func(key, more string) (prompt, cached int) {
		t.Helper()
		body := `{"model":"m","stream":false,"prompt_cache_key":"` + key + `","messages":[{"role":"user","content":"` + long + more + `"}]}`
		_, _, b := post(t, base, "/v1/chat/completions", body)
		var c struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				Details      struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return c.Usage.PromptTokens, c.Usage.Details.Cached
	}
	if _, cached := openAI("a", "one"); cached != 0 {
		t.Errorf("a first request read %d tokens from the cache", cached)
	}
	prompt, cached := openAI("a", "two")
	if want := (len(`{"model":"m","stream":false,"prompt_cache_key":"a","messages":[{"role":"user","content":"`) + len(long)) / cacheBlock * cacheBlock / 4; cached != want || prompt <= cached {
		t.Errorf("the second request: %d of %d tokens from the cache, want %d", cached, prompt, want)
	}
	if _, cached := openAI("b", "two"); cached != 0 {
		t.Errorf("another conversation read %d tokens from the first's cache", cached)
	}

	anth := func(msgs string) (input, read, write int) {
		t.Helper()
		body := `{"model":"m","max_tokens":10,"stream":false,"messages":[` + msgs + `]}`
		_, _, b := post(t, base, "/v1/messages", body)
		var m struct {
			Usage struct {
				Input int `json:"input_tokens"`
				Read  int `json:"cache_read_input_tokens"`
				Write int `json:"cache_creation_input_tokens"`
			}
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return m.Usage.Input, m.Usage.Read, m.Usage.Write
	}
	const bp = `,"cache_control":{"type":"ephemeral"}`
	first := `{"role":"user","content":[{"type":"text","text":"` + long + `"` + bp + `}]}`
	if _, read, write := anth(first); read != 0 || write == 0 {
		t.Errorf("Anthropic's first request: %d read, %d written", read, write)
	}
	// The next turn: the breakpoint moves to its newest message; the first
	// message, marked before, is read.
	next := `{"role":"user","content":[{"type":"text","text":"` + long + `"}]},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":[{"type":"text","text":"more"` + bp + `}]}`
	input, read, write := anth(next)
	if read == 0 || write == 0 || input > 20 {
		t.Errorf("Anthropic's next turn: %d input, %d read, %d written", input, read, write)
	}
}
