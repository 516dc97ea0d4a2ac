package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/fleet/fleettest"
)

// post sends a message to thread and returns the status and the body.
func (h *harness) post(t *testing.T, thread, text string) (int, string) {
	t.Helper()
	code, body, err := fleettest.Post(http.DefaultClient, h.url, "ada", h.key, thread, `{"text":"`+text+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// With conversations kept by lnk-sqlite in chats/events.sqlite, a message
// to a thread whose folder would bear a name the stores or the harness
// keep for themselves is refused with 400, before the file is made and
// after, and every other thread keeps its turns; no such folder is made.
func TestReservedThreadNames(t *testing.T) {
	keptBy(t, "sqlite")
	dir := t.TempDir()
	modelAddr := startModel(t)
	h := &harness{key: "k-e2e-0123456789abcdef0123456789", log: new(bytes.Buffer)}
	var keyFile string
	h.home, keyFile = adaHome(t, dir, `{"storage": {"conversations": "sqlite"}}`, h.key)
	cmd, addr := startLogged(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, h.log, "lnk-link-harness",
		"serve", "--home", h.home, "--listen", "127.0.0.1:0", "--key-file", keyFile)
	h.url, h.cmd = "http://"+addr, cmd

	reserved := []string{
		"events.sqlite", "events.sqlite-wal", "events.sqlite-shm", "events.pebble", "Events.SQLite",
		"events.jsonl", "events.zst.torn", "store.sqlite", "chat.md", "tools.json", "end", "pending",
	}
	refused := func(when string) {
		t.Helper()
		for _, thread := range reserved {
			if code, body := h.post(t, thread, "hello"); code != http.StatusBadRequest || !strings.Contains(body, "keep for themselves") {
				t.Errorf("%s: a message to %q: %d %s, want 400 saying why", when, thread, code, body)
			}
		}
	}
	answered := func(when string, threads ...string) {
		t.Helper()
		for _, thread := range threads {
			if code, body := h.post(t, thread, "hello"); code != http.StatusOK {
				t.Fatalf("%s: a message to %q: %d %s", when, thread, code, body)
			}
		}
	}
	refused("before the file is made")
	answered("after the refusals", "a", "telegram:42")
	refused("once the file is there")
	answered("after the refusals again", "a", "b", "telegram:42")

	chats := filepath.Join(h.home, "chats")
	if fi, err := os.Stat(filepath.Join(chats, "events.sqlite")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("chats/events.sqlite: %v, %v; want a file of mode 0600", fi, err)
	}
	if got := strings.Join(folders(t, chats), " "); got != "a b telegram-42~mxmekvd5hxz7cn2b" {
		t.Errorf("chats/ holds the folders %s, want a b telegram-42~mxmekvd5hxz7cn2b", got)
	}
}
