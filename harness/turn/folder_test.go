package turn

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/harness/home"
)

// Names the rule before made one folder of (telegram:42 and telegram-42,
// group:日本 and group:中国, Web1 and web1, which a case-insensitive disk
// folds) are each answered, in a folder of their own.
func TestThreadsOfOneFormerFolder(t *testing.T) {
	r, _ := newRunner(t, nil)
	ctx := context.Background()
	folders := map[string]string{}
	for _, thread := range []string{"telegram:42", "telegram-42", "group:日本", "group:中国", "Web1", "web1"} {
		a, err := r.Message(ctx, thread, Message{Text: "hi"}, nil)
		if err != nil || a.Thread != thread || a.Seq != 2 {
			t.Fatalf("%q: %+v, %v", thread, a, err)
		}
		dir, err := r.Folder(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := folders[dir]; ok {
			t.Errorf("%q and %q in one folder, %s", thread, other, dir)
		}
		folders[dir] = thread
		if ev := events(t, r, thread); len(ev) != 2 || ev[0].Thread != thread {
			t.Errorf("%q: its folder holds %d events, the first naming %q", thread, len(ev), ev[0].Thread)
		}
	}
}

// A conversation made before the rule, in the folder the rule before made
// of its name, keeps it: its next turns and a read of it find it there,
// and nothing is made where its name makes a folder now. A name that met
// it there is answered in a folder of its own.
func TestFormerFolderKept(t *testing.T) {
	r, _ := newRunner(t, nil)
	ctx := context.Background()
	former := filepath.Join(r.Agent.Dir, "chats", "group-------")
	writeWindow(t, former, "group:日本", 2)
	now, _ := r.Agent.Path(home.Chat, "group:日本")

	if dir, err := r.Folder(ctx, "group:日本"); err != nil || dir != former {
		t.Fatalf("the folder of group:日本: %q, %v; want %q", dir, err, former)
	}
	a, err := r.Message(ctx, "group:日本", Message{ID: "m3", Text: "again"}, nil)
	if err != nil || a.Seq != 4 {
		t.Fatalf("the next turn of a conversation made before: %+v, %v", a, err)
	}
	if ev := readLog(t, former); len(ev) != 4 || ev[0].Thread != "group:日本" || ev[2].Text != "again" {
		t.Errorf("the folder made before holds %d events: %+v", len(ev), ev)
	}
	if _, err := os.Stat(now); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a folder made by the rule now beside the one kept: %v", err)
	}
	conv, err := r.Conversation("group:日本")
	if err != nil {
		t.Fatal(err)
	}
	last, err := conv.Last(ctx)
	conv.Close()
	if err != nil || last != 4 {
		t.Errorf("read: %d events, %v", last, err)
	}

	// The name that met it there has its own.
	b, err := r.Message(ctx, "group:中国", Message{Text: "hi"}, nil)
	if err != nil || b.Seq != 2 {
		t.Fatalf("group:中国 beside it: %+v, %v", b, err)
	}
	if ev := events(t, r, "group:中国"); ev[0].Thread != "group:中国" {
		t.Errorf("group:中国's folder names %q", ev[0].Thread)
	}

}

// In a home written before the rule, a plain name that is the folder the
// rule before made of another's still meets that conversation there: it
// is refused, and the other is answered on, untouched.
func TestFormerFolderClash(t *testing.T) {
	r, _ := newRunner(t, nil)
	ctx := context.Background()
	former := filepath.Join(r.Agent.Dir, "chats", "a-b")
	writeWindow(t, former, "a b", 2)
	if _, err := r.Message(ctx, "a-b", Message{Text: "hi"}, nil); !errors.Is(err, ErrThreadClash) {
		t.Fatalf("a-b, whose folder holds a b's conversation: %v", err)
	}
	if a, err := r.Message(ctx, "a b", Message{Text: "hi"}, nil); err != nil || a.Seq != 4 {
		t.Fatalf("a b after: %+v, %v", a, err)
	}
	if ev := readLog(t, former); len(ev) != 4 || ev[0].Thread != "a b" {
		t.Errorf("a b's folder holds %+v", ev)
	}
}
