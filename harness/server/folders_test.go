package server

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// formerHome makes f's home one written before the folder rule: thread's
// conversation, one message answered, moved to the folder the rule before
// made of its name, dir, as a home of then holds it.
func (f *fixture) formerHome(t *testing.T, thread, dir string) {
	t.Helper()
	f.said(t, thread, `{"text":"said before the rule","owner":true}`)
	if err := os.Rename(filepath.Join(f.home, chatFile(thread, "")), filepath.Join(f.home, "chats", dir)); err != nil {
		t.Fatal(err)
	}
}

// In a home written before the folder rule, telegram:42's conversation in
// telegram-42 is answered on there; telegram-42, whose folder that is, is
// refused 409, the body naming the folder but not the home.
func TestFormerFolderServed(t *testing.T) {
	f := newFixture(t, nil)
	f.formerHome(t, "telegram:42", "telegram-42")
	if code, body := f.post(t, "/v1/agents/ada/chats/telegram:42/messages", key, `{"text":"and now"}`); code != 200 || !strings.Contains(body, `"seq":4`) {
		t.Fatalf("the next turn of a conversation made before: %d %s", code, body)
	}
	code, body := f.post(t, "/v1/agents/ada/chats/telegram-42/messages", key, `{"text":"hi"}`)
	if code != http.StatusConflict {
		t.Errorf("a thread whose folder another's conversation made before holds: %d %s", code, body)
	}
	if strings.Contains(body, f.home) || !strings.Contains(body, `\u003chome\u003e/chats/telegram-42`) {
		t.Errorf("a clashing thread's body names the home, or not the folder: %s", body)
	}
	events, err := os.ReadFile(filepath.Join(f.home, "chats", "telegram-42", "events.jsonl"))
	if err != nil || strings.Count(string(events), "\n") != 4 || strings.Contains(string(events), `"thread":"telegram-42"`) {
		t.Errorf("telegram:42's folder: %s %v", events, err)
	}
	if _, err := os.Stat(filepath.Join(f.home, chatFile("telegram:42", ""))); !os.IsNotExist(err) {
		t.Errorf("a folder made by the rule now beside the one kept: %v", err)
	}
}

// The state of a home written before the folder rule is taken out with its
// folders as they are, and given to a fresh home, where each conversation
// is written in the folder its name makes now, and answered on.
func TestStateOfAHomeWrittenBefore(t *testing.T) {
	from, to := newFixture(t, nil), newFixture(t, nil)
	from.formerHome(t, "telegram:42", "telegram-42")
	from.formerHome(t, "Web1", "Web1")
	code, archive := from.do(t, http.MethodGet, "/asp/v1/agents/ada/state", nil)
	if code != 200 || !bytes.Contains(archive, []byte(`"dir": "telegram-42"`)) || !bytes.Contains(archive, []byte(`"dir": "Web1"`)) {
		t.Fatalf("export: %d %s", code, archive)
	}
	threads := []string{"telegram:42", "Web1"}
	imported(t, from, to, archive, threads...)
	for _, thread := range threads {
		if _, err := os.Stat(filepath.Join(to.home, chatFile(thread, "events.jsonl"))); err != nil {
			t.Errorf("%s imported, not in the folder its name makes: %v", thread, err)
		}
		if code, body := to.post(t, "/v1/agents/ada/chats/"+thread+"/messages", key, `{"text":"again"}`); code != 200 || !strings.Contains(body, `"seq":4`) {
			t.Errorf("%s: the next turn after the import: %d %s", thread, code, body)
		}
	}
}
