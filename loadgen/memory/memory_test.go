package memory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/internal/mcptest"
)

func TestMemory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "files"), 0o700)
	os.WriteFile(filepath.Join(dir, "files", "plan.md"), []byte("buy TEA on friday\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "secret.key"), []byte("tea"), 0o600)
	c, _ := mcptest.Start(t, New(dir, nil))
	if _, isErr := c.Call("remember", map[string]any{"note": "Ada likes\ntea"}); isErr {
		t.Fatal("remember refused")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "memory", "notes.md"))
	if string(b) != "# Your notes\n\n- Ada likes tea\n" {
		t.Fatalf("notes.md: %q", b)
	}
	for {
		text, isErr := c.Call("remember", map[string]any{"note": strings.Repeat("n", 200)})
		if isErr {
			if !strings.Contains(text, "change or forget a note first") {
				t.Fatalf("refusal: %s", text)
			}
			break
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "memory", "notes.md")); len(b) > MaxNotesBytes {
		t.Fatalf("notes.md is %d bytes", len(b))
	}
	if _, isErr := c.Call("forget", map[string]any{"note": "nnnn"}); isErr {
		t.Fatal("forget")
	}
	text, _ := c.Call("search", map[string]any{"query": "tea"})
	if !strings.Contains(text, "memory/notes.md:3: - Ada likes tea") || !strings.Contains(text, "files/plan.md:1: buy TEA") || strings.Contains(text, "secret") {
		t.Errorf("search: %s", text)
	}
	if text, isErr := c.Call("read", map[string]any{"path": "../secret.key"}); !isErr {
		t.Errorf("read outside: %s", text)
	}
	if text, isErr := c.Call("read", map[string]any{"path": "secret.key"}); !isErr {
		t.Errorf("read a file not the agent's notes, files or copies: %s", text)
	}
	if text, _ := c.Call("read", map[string]any{"path": "files/plan.md"}); text != "buy TEA on friday\n" {
		t.Errorf("read: %q", text)
	}
	if text, _ := c.Call("list", nil); !strings.Contains(text, "files/plan.md\t18 bytes") {
		t.Errorf("list: %s", text)
	}
}

// The server tells whoever serves it of each call and the conversation its
// _meta said; a call that said none is told as the zero Conversation.
func TestMemorySeesConversation(t *testing.T) {
	type call struct {
		name string
		conv tools.Conversation
	}
	var seen []call
	c, _ := mcptest.Start(t, New(t.TempDir(), func(name string, conv tools.Conversation) {
		seen = append(seen, call{name, conv})
	}))
	c.Conv = tools.Conversation{Agent: "ada", Thread: "web:1"}
	c.Call("remember", map[string]any{"note": "tea"})
	c.Conv = tools.Conversation{}
	c.Call("list", nil)
	want := []call{{"remember", tools.Conversation{Agent: "ada", Thread: "web:1"}}, {"list", tools.Conversation{}}}
	if !slices.Equal(seen, want) {
		t.Errorf("seen %+v, want %+v", seen, want)
	}
}
