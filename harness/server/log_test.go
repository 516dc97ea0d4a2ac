package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/sqlite"
)

// A failed turn, a refusal and a lease taken from a dead holder are each
// logged once, with the agent, the thread and (where one was written) the
// seq; no line holds a message's text or a key.
func TestLogLines(t *testing.T) {
	var buf hometest.Logs
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "chats.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	script := &scripted.Script{Rules: []scripted.Rule{{Match: "please fail", Status: 500}, {Match: "any", Text: "fine"}}}
	f := newFixture(t, script, func(r *turn.Runner) {
		r.Log = log
		r.Open = func(dir, kind string) (store.Conversation, error) { return db.Open(filepath.Base(dir)) }
	})
	const secret = "zebra-5e3c7"
	wrongKey := "k-fedcba9876543210fedcba9876543210"

	if code, body := f.post(t, "/v1/agents/ada/chats/broken/messages", key, `{"text":"please fail `+secret+`"}`); code != 502 {
		t.Fatalf("a failed turn: %d %s", code, body)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/t/messages", wrongKey, `{"text":"`+secret+`"}`); code != 401 {
		t.Fatalf("a wrong key: %d %s", code, body)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/held/messages", key, `{"text":"first `+secret+`"}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	// A holder that died holding the lease: taken with a short time to
	// live, never let go.
	c, err := db.Open("held")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.(store.Leaser).Lease(context.Background(), "dead@elsewhere:1:1", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/held/messages", key, `{"text":"again `+secret+`"}`); code != 200 {
		t.Fatalf("after a dead holder: %d %s", code, body)
	}

	lines := buf.Lines(t)
	for _, want := range []struct {
		msg    string
		thread string
		seq    float64 // 0: none known
		more   map[string]any
	}{
		{"turn failed", "broken", 1, map[string]any{"level": "ERROR"}},
		{"refused", "t", 0, map[string]any{"level": "WARN", "status": float64(401)}},
		{"lease taken over", "held", 2, map[string]any{"level": "WARN", "from": "dead@elsewhere:1:1"}},
	} {
		var found []map[string]any
		for _, l := range lines {
			if l["msg"] == want.msg {
				found = append(found, l)
			}
		}
		if len(found) != 1 {
			t.Errorf("%q logged %d times, want once: %v", want.msg, len(found), found)
			continue
		}
		l := found[0]
		if l["agent"] != "ada" || l["thread"] != want.thread {
			t.Errorf("%q: agent %v thread %v, want ada %s", want.msg, l["agent"], l["thread"], want.thread)
		}
		if seq, ok := l["seq"]; want.seq != 0 && seq != want.seq || want.seq == 0 && ok {
			t.Errorf("%q: seq %v, want %v", want.msg, l["seq"], want.seq)
		}
		for k, v := range want.more {
			if l[k] != v {
				t.Errorf("%q: %s %v, want %v", want.msg, k, l[k], v)
			}
		}
	}
	all := buf.String()
	t.Log(all)
	for _, never := range []string{secret, key, wrongKey} {
		if strings.Contains(all, never) {
			t.Errorf("the log holds %q:\n%s", never, all)
		}
	}
}
