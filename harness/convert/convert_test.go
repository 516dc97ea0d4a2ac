package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/storetest"
)

// folders reaches the log, compact, and one driver, "kept", keeping each
// conversation as a log in a folder under its root by the conversation
// folder's name, in this process. A store.kept file marks a folder it
// keeps.
type folders struct{ kept store.Driver }

func newFolders(t *testing.T) folders {
	return folders{kept: storetest.Folders(t.TempDir(), func(dir string) (store.Conversation, error) { return eventlog.Open(dir) })}
}

func (f folders) Kind(dir string) (string, error) {
	switch {
	case exists(filepath.Join(dir, "store.kept")):
		return "kept", nil
	case exists(filepath.Join(dir, compact.FramesName)):
		return "compact", nil
	case exists(filepath.Join(dir, eventlog.FileName)):
		return "log", nil
	}
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return "", nil
}

func (f folders) Open(dir, kind string) (store.Conversation, error) {
	was, err := f.Kind(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if was == "" {
		was = kind
	}
	switch was {
	case "kept":
		return f.OpenKept(dir, was)
	case "compact":
		return compact.Open(dir)
	case "log":
		return eventlog.Open(dir)
	}
	return nil, fmt.Errorf("%w: %s", store.ErrNotFound, dir)
}

func (f folders) OpenKept(dir, name string) (store.Conversation, error) {
	if name != "kept" {
		return nil, fmt.Errorf("no driver %q", name)
	}
	return f.kept.Open(filepath.Base(dir))
}

func (f folders) Mark(dir, name string) error {
	return os.WriteFile(filepath.Join(dir, "store."+name), nil, 0o600)
}

func (f folders) Bridged() bool { return false }

// logHome makes an agent's chats folder with one log conversation of 100
// events, what else a folder holds beside them, and an empty folder; it
// returns the chats folder, the conversation's folder and the log's bytes.
func logHome(t *testing.T) (string, string, []byte) {
	chats := filepath.Join(t.TempDir(), "chats")
	dir := filepath.Join(chats, "telegram-42")
	os.MkdirAll(filepath.Join(dir, "pending"), 0o700)
	os.MkdirAll(filepath.Join(chats, "new"), 0o700)
	l, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
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
	os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`{"tools":["read_file"]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "pending", "7.json"), []byte(`{"seq":7}`), 0o600)
	os.WriteFile(filepath.Join(dir, "chat.md"), []byte("copy"), 0o600)
	return chats, dir, orig
}

// TestRoundTrip converts a log to compact, to a driver and back: every
// event comes back byte for byte, what else the folder held moves along,
// only a log keeps chat.md, and a driver that cannot forget is told of.
func TestRoundTrip(t *testing.T) {
	chats, dir, orig := logHome(t)
	var warned []string
	c := &Converter{Stores: newFolders(t), Warn: func(msg string) { warned = append(warned, msg) }}
	for _, step := range []struct {
		to    string
		files []string
	}{
		{"compact", []string{compact.FramesName, "tools.json", "pending/7.json"}},
		{"kept", []string{"store.kept", "tools.json", "pending/7.json"}},
		{"log", []string{eventlog.FileName, "tools.json", "pending/7.json"}},
	} {
		count, err := c.Chats(chats, step.to)
		if err != nil {
			t.Fatalf("to %s: %v", step.to, err)
		}
		if count[Converted] != 1 || count[Skipped] != 1 {
			t.Errorf("to %s: %v", step.to, count)
		}
		for _, name := range step.files {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("after to %s: %v", step.to, err)
			}
		}
		if step.to != "log" && exists(filepath.Join(dir, "chat.md")) {
			t.Errorf("a conversation kept as %s kept chat.md", step.to)
		}
		if m, _ := filepath.Glob(filepath.Join(chats, "*"+Suffix)); len(m) != 0 {
			t.Errorf("to %s: left behind %v", step.to, m)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, eventlog.FileName)); !bytes.Equal(got, orig) {
		t.Fatalf("log → compact → kept → log gave %d bytes back of %d", len(got), len(orig))
	}
	for _, name := range []string{compact.FramesName, "store.kept"} {
		if exists(filepath.Join(dir, name)) {
			t.Errorf("%s was not forgotten", name)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "cannot forget telegram-42") {
		t.Errorf("told %q", warned)
	}
	if count, err := c.Chats(chats, "log"); err != nil || count[Already] != 1 {
		t.Errorf("again: %v, %v", count, err)
	}
}

// TestSettle finishes a conversion that stopped before its exchange: the
// folder beside is removed, and the driver's copy it marked, which nothing
// reads, is forgotten or told of.
func TestSettle(t *testing.T) {
	chats, dir, orig := logHome(t)
	f := newFolders(t)
	var warned []string
	c := &Converter{Stores: f, Warn: func(msg string) { warned = append(warned, msg) }}
	os.Mkdir(dir+Suffix, 0o700)
	f.Mark(dir+Suffix, "kept")
	if _, err := c.Chats(chats, "compact"); err != nil {
		t.Fatal(err)
	}
	if exists(dir + Suffix) {
		t.Fatal("the folder beside is still there")
	}
	if len(warned) != 1 {
		t.Errorf("told %q", warned)
	}
	if _, err := c.Chats(chats, "log"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, eventlog.FileName)); !bytes.Equal(got, orig) {
		t.Fatalf("gave %d bytes back of %d", len(got), len(orig))
	}
}

func TestNoChats(t *testing.T) {
	c := &Converter{Stores: newFolders(t)}
	if _, err := c.Chats(filepath.Join(t.TempDir(), "chats"), "log"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no chats folder: %v", err)
	}
}
