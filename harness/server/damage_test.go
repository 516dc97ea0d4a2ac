package server

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// TestChatDamaged reads conversations damaged in the middle, small and
// past what the server holds before it answers: the events and the copy
// made from them are answered 500 naming the file and offset, never 200
// with the events before the damage.
func TestChatDamaged(t *testing.T) {
	f := newFixture(t, nil)
	get := func(path, accept string) (int, string) {
		resp, body := exchange(t, http.MethodGet, f.url+path, key, "", "Accept", accept)
		return resp.StatusCode, body
	}
	// A big conversation, past what is held: 40 events of 40 KB.
	var big []event.Event
	for seq := int64(1); seq <= 40; seq++ {
		big = append(big, event.Event{Seq: seq, Time: time.Unix(1767225600+seq, 0).UTC(), Type: event.TypeMessage, Text: strings.Repeat("x", 40<<10)})
	}
	big[0].Thread = "big"
	f.kept(t, "big", big...)
	f.said(t, "t", `{"text":"message 0"}`, `{"text":"message 1"}`, `{"text":"message 2"}`)
	for _, c := range []struct {
		thread string
		line   int // the line damaged, from 0
	}{{"t", 3}, {"big", 35}} {
		path := filepath.Join(f.home, "chats", c.thread, eventlog.FileName)
		b, _ := os.ReadFile(path)
		at := 0
		for range c.line {
			at += bytes.IndexByte(b[at:], '\n') + 1
		}
		b[at+bytes.Index(b[at:], []byte(`"time":`))+6] = '!' // invalid JSON, the seq whole
		os.WriteFile(path, b, 0o600)
		os.Remove(filepath.Join(f.home, "chats", c.thread, "chat.md"))
		for _, accept := range []string{"application/jsonl", ""} {
			code, body := get("/v1/agents/ada/chats/"+c.thread, accept)
			if code != http.StatusInternalServerError || !strings.Contains(body, "offset") || !strings.Contains(body, "store: corrupt") {
				t.Errorf("%s, %q: %d %.200s", c.thread, accept, code, body)
			}
		}
	}
}
