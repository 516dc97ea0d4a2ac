package measure

import (
	"bytes"
	"os"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
)

// The conversation is written in the folder the harness reads a thread
// from (FORMATS.md, "An agent's home").
func TestConversationPath(t *testing.T) {
	for in, want := range map[string]string{
		"measure-1":   "/h/chats/measure-1/events.jsonl",
		"telegram:42": "/h/chats/telegram-42~mxmekvd5hxz7cn2b/events.jsonl",
		"a b.c_D":     "/h/chats/a-b.c_D~bbfigvq7dd4ambxk/events.jsonl",
	} {
		if got, err := conversationPath("/h", in); err != nil || got != want {
			t.Errorf("conversationPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if got, err := conversationPath("/h", "a/b"); err == nil {
		t.Errorf("conversationPath(a/b) = %q, want an error", got)
	}
}

func TestAppendConversation(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const n = 101
	b := AppendConversation(nil, Thread, n, now)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	var d event.Decoder
	var prev time.Time
	for i, line := range lines {
		if len(line) < 550 || len(line) > 650 {
			t.Errorf("event %d is %d bytes, want about 600", i+1, len(line))
		}
		var e event.Event
		if err := d.Decode(line, &e); err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		if (i == 0) != (e.Thread == Thread) {
			t.Errorf("event %d thread %q", i+1, e.Thread)
		}
		wantType := event.TypeMessage
		if e.Seq%2 == 0 {
			wantType = event.TypeAnswer
			if e.Window == nil || e.Window.Start < 1 || e.Window.Start >= e.Seq || e.Window.Start%2 != 1 {
				t.Errorf("answer %d window %+v: want a message before it", e.Seq, e.Window)
			}
		}
		if e.Type != wantType {
			t.Errorf("event %d type %q, want %q", e.Seq, e.Type, wantType)
		}
		if !e.Time.After(prev) || !e.Time.Before(now) {
			t.Errorf("event %d time %v", e.Seq, e.Time)
		}
		prev = e.Time
	}

	home := t.TempDir()
	if err := writeConversation(home, Thread, b); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(home + "/chats/measure-1/events.jsonl")
	if err != nil || !bytes.Equal(got, b) {
		t.Errorf("written file differs (err %v)", err)
	}
	if err := writeConversation(home, Thread, b); err == nil {
		t.Error("a conversation was written over")
	}
}

func BenchmarkAppendConversation(b *testing.B) {
	b.ReportAllocs()
	now := time.Now()
	var buf []byte
	for b.Loop() {
		buf = AppendConversation(buf[:0], Thread, 1000, now)
	}
	b.SetBytes(int64(len(buf)))
}
