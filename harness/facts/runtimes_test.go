package facts

import (
	"testing"
	"time"
)

// What a runtime said is kept for RuntimeTTL, by its key, and no longer.
func TestRuntimes(t *testing.T) {
	var c Runtimes
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	if _, _, ok := c.Said("ollama\x00qwen3:8b", at); ok {
		t.Fatal("said before anything was kept")
	}
	c.Keep("ollama\x00qwen3:8b", 40960, 8192, at)
	for _, tc := range []struct {
		key   string
		after time.Duration
		ok    bool
	}{
		{"ollama\x00qwen3:8b", 0, true},
		{"ollama\x00qwen3:8b", RuntimeTTL - time.Second, true},
		{"ollama\x00qwen3:8b", RuntimeTTL, false},
		{"ollama\x00llama4", 0, false},
	} {
		trained, runs, ok := c.Said(tc.key, at.Add(tc.after))
		if ok != tc.ok || ok && (trained != 40960 || runs != 8192) {
			t.Errorf("%q after %v: %d, %d, %v; want kept %v", tc.key, tc.after, trained, runs, ok, tc.ok)
		}
	}
}
