package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// TestConvertRoundTrip converts a log to compact and back: every event
// comes back byte for byte, what else the folder held moves along, and a
// compact conversation keeps no chat.md.
func TestConvertRoundTrip(t *testing.T) {
	h := t.TempDir()
	dir := filepath.Join(h, "chats", "telegram-42")
	os.MkdirAll(filepath.Join(dir, "pending"), 0o700)
	l, _ := eventlog.Open(dir)
	for seq := int64(1); seq <= 100; seq++ {
		e := event.Event{Seq: seq, Time: time.Unix(1767225600+seq, 0).UTC(), Type: event.TypeMessage, Text: strings.Repeat("word ", int(seq%13)+3)}
		if seq == 1 {
			e.Thread = "telegram:42"
		}
		if err := l.Append(context.Background(), seq, event.Append(nil, &e)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	orig, _ := os.ReadFile(filepath.Join(dir, eventlog.FileName))
	os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`["read_file"]`), 0o600)
	os.WriteFile(filepath.Join(dir, "pending", "7.json"), []byte(`{"seq":7}`), 0o600)
	os.WriteFile(filepath.Join(dir, "chat.md"), []byte("copy"), 0o600)

	if err := cmdChatConvert([]string{"--home", h, "--to", "compact"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{compact.FramesName, "tools.json", "pending/7.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after --to compact: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "chat.md")); err == nil {
		t.Error("a compact conversation kept chat.md")
	}
	if m, _ := filepath.Glob(filepath.Join(h, "chats", "*~convert")); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	if err := cmdChatConvert([]string{"--home", h, "--to", "log"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, eventlog.FileName)); !bytes.Equal(got, orig) {
		t.Fatalf("log → compact → log gave %d bytes back of %d", len(got), len(orig))
	}
	if _, err := os.Stat(filepath.Join(dir, compact.FramesName)); err == nil {
		t.Error("the frames were not forgotten")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pending", "7.json")); string(b) != `{"seq":7}` {
		t.Error("pending/ did not move along")
	}
}

// TestConvertRefusedWhileServed holds the home as lnk-link-harness serve
// does: convert refuses, saying why.
func TestConvertRefusedWhileServed(t *testing.T) {
	h := t.TempDir()
	f, _ := os.Open(h)
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	err := cmdChatConvert([]string{"--home", h, "--to", "compact"})
	if err == nil || !strings.Contains(err.Error(), "the agent is running") {
		t.Fatalf("convert while served: %v", err)
	}
	if err := cmdChatConvert([]string{"--home", t.TempDir(), "--to", "nosuchdriver"}); err == nil || !strings.Contains(err.Error(), "no program lnk-nosuchdriver") {
		t.Fatalf("convert to a driver with no program: %v", err)
	}
}
