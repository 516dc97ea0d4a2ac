package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/internal/mcptest"
)

// start is the file server over a new agent's home, and a client of it.
func start(t *testing.T) (string, func(name string, args map[string]any) (string, bool)) {
	t.Helper()
	dir := t.TempDir()
	s, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, res := mcptest.Start(t, s)
	if res.Instructions != Instructions {
		t.Errorf("instructions %q", res.Instructions)
	}
	return dir, c.Call
}

// Write makes the folders and writes the file whole; read gives it back;
// replace changes the one place that holds the text, and refuses none or
// many; find matches by path, or by name in any folder.
func TestFiles(t *testing.T) {
	dir, call := start(t)
	if text, isErr := call("write", map[string]any{"path": "notes/plan.md", "text": "buy tea\nbuy milk\n"}); isErr || !strings.Contains(text, "17 bytes to notes/plan.md") {
		t.Fatalf("write: %s", text)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "files", "notes", "plan.md")); err != nil || string(b) != "buy tea\nbuy milk\n" {
		t.Fatalf("on disk: %q %v", b, err)
	}
	if text, _ := call("read", map[string]any{"path": "notes/plan.md"}); text != "buy tea\nbuy milk\n" {
		t.Errorf("read: %q", text)
	}
	if text, isErr := call("replace", map[string]any{"path": "notes/plan.md", "old": "buy", "new": "get"}); !isErr || !strings.Contains(text, "2 times") {
		t.Errorf("replace of a text held twice: %s", text)
	}
	if text, isErr := call("replace", map[string]any{"path": "notes/plan.md", "old": "coffee", "new": "tea"}); !isErr || !strings.Contains(text, "does not hold") {
		t.Errorf("replace of a text not held: %s", text)
	}
	if _, isErr := call("replace", map[string]any{"path": "notes/plan.md", "old": "buy milk", "new": "get milk"}); isErr {
		t.Error("replace refused")
	}
	if text, _ := call("read", map[string]any{"path": "notes/plan.md"}); text != "buy tea\nget milk\n" {
		t.Errorf("after replace: %q", text)
	}
	call("write", map[string]any{"path": "top.md", "text": "x"})
	call("write", map[string]any{"path": "a/b/c.txt", "text": "y"})
	if text, _ := call("find", map[string]any{"pattern": "*.md"}); text != "notes/plan.md\ntop.md" {
		t.Errorf("find *.md: %q", text)
	}
	if text, _ := call("find", map[string]any{"pattern": "a/*/c.txt"}); text != "a/b/c.txt" {
		t.Errorf("find a/*/c.txt: %q", text)
	}
	if text, _ := call("find", map[string]any{"pattern": "*.go"}); !strings.Contains(text, "No file matches") {
		t.Errorf("find nothing: %q", text)
	}
	if text, isErr := call("find", map[string]any{"pattern": "["}); !isErr || !strings.Contains(text, "bad pattern") {
		t.Errorf("find a bad pattern: %q", text)
	}
}

// Every path stays inside files/: a climb is cleaned to a path inside, a
// symlink out is refused, and a long file is read cut, saying so.
func TestFilesStayInside(t *testing.T) {
	dir, call := start(t)
	os.WriteFile(filepath.Join(dir, "secret.key"), []byte("the key"), 0o600)
	os.WriteFile(filepath.Join(dir, "outside.md"), []byte("the outside"), 0o600)
	if text, isErr := call("read", map[string]any{"path": "../secret.key"}); !isErr || strings.Contains(text, "the key") {
		t.Errorf("read ../secret.key: %q", text)
	}
	if _, isErr := call("write", map[string]any{"path": "../../escaped.md", "text": "out"}); isErr {
		t.Error("a climbing write is cleaned inside, not refused")
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "escaped.md")); err != nil {
		t.Errorf("the climbing write was not kept inside: %v", err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret.key"), filepath.Join(dir, "files", "link")); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call("read", map[string]any{"path": "link"}); !isErr || strings.Contains(text, "the key") {
		t.Errorf("read through a symlink out: %q", text)
	}
	if _, isErr := call("write", map[string]any{"path": "link", "text": "overwritten"}); !isErr {
		t.Error("a write through a symlink out was taken")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "secret.key")); string(b) != "the key" {
		t.Errorf("the file outside was changed: %q", b)
	}
	os.Symlink(dir, filepath.Join(dir, "files", "up"))
	if text, _ := call("find", map[string]any{"pattern": "*.md"}); strings.Contains(text, "outside.md") {
		t.Errorf("find followed a symlink out: %q", text)
	}
	call("write", map[string]any{"path": "big.txt", "text": strings.Repeat("x", maxReadBytes+10)})
	if text, _ := call("read", map[string]any{"path": "big.txt"}); !strings.HasSuffix(text, "[cut at 65536 bytes]") || len(text) > maxReadBytes+40 {
		t.Errorf("a long read: %d bytes, ending %q", len(text), text[len(text)-30:])
	}
	if text, isErr := call("write", map[string]any{"path": "", "text": "x"}); !isErr || !strings.Contains(text, "needs a path") {
		t.Errorf("a write without a path: %q", text)
	}
}

// Whoever serves the file server is told of each call's conversation.
func TestFilesSeeConversation(t *testing.T) {
	conv := tools.Conversation{Agent: "ada", Thread: "group:日本"}
	var seen []tools.Conversation
	s, err := New(t.TempDir(), func(call string, c tools.Conversation) {
		if call == "write" {
			seen = append(seen, c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := mcptest.Start(t, s)
	c.Conv = conv
	c.Call("write", map[string]any{"path": "a.md", "text": "x"})
	if len(seen) != 1 || seen[0] != conv {
		t.Errorf("seen %+v, want %+v", seen, conv)
	}
}
