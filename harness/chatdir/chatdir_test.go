package chatdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/storetest"
)

func openLog(dir, _ string) (store.Conversation, error) { return eventlog.Open(dir) }

// write makes folder dir of a's chats/ and, when thread is not empty, a
// log in it whose first event names thread.
func write(t testing.TB, a home.Agent, dir, thread string) string {
	t.Helper()
	path := filepath.Join(a.Dir, "chats", dir)
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if thread == "" {
		return path
	}
	c, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Append(context.Background(), 1, storetest.Event(thread, 1, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFind(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		thread string
		setup  func(home.Agent) // what the home holds
		want   string           // the folder found, under chats/
	}{
		{"a plain name", "web-1", func(home.Agent) {}, "web-1"},
		{"a plain name whose folder holds another", "a-b", func(a home.Agent) { write(t, a, "a-b", "a b") }, "a-b"},
		{"nothing yet", "telegram:42", func(home.Agent) {}, "telegram-42~mxmekvd5hxz7cn2b"},
		{"made before", "telegram:42", func(a home.Agent) { write(t, a, "telegram-42", "telegram:42") }, "telegram-42"},
		{"upper case, made before", "Web1", func(a home.Agent) { write(t, a, "Web1", "Web1") }, "Web1"},
		{"the folder made before holds another", "telegram:42", func(a home.Agent) { write(t, a, "telegram-42", "telegram-42") }, "telegram-42~mxmekvd5hxz7cn2b"},
		{"the folder made before holds none", "telegram:42", func(a home.Agent) { write(t, a, "telegram-42", "") }, "telegram-42~mxmekvd5hxz7cn2b"},
		{"both there: the rule's", "telegram:42", func(a home.Agent) {
			write(t, a, "telegram-42", "telegram:42")
			write(t, a, "telegram-42~mxmekvd5hxz7cn2b", "telegram:42")
		}, "telegram-42~mxmekvd5hxz7cn2b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := home.Agent{Name: "ada", Dir: t.TempDir()}
			tc.setup(a)
			got, err := Find(ctx, a, tc.thread, openLog)
			if want := filepath.Join(a.Dir, "chats", tc.want); err != nil || got != want {
				t.Errorf("Find(%q) = %q, %v; want %q", tc.thread, got, err, want)
			}
		})
	}
}

func TestFindErrors(t *testing.T) {
	ctx := context.Background()
	a := home.Agent{Name: "ada", Dir: t.TempDir()}
	if _, err := Find(ctx, a, "../x", openLog); !errors.Is(err, home.ErrBadName) {
		t.Errorf("a bad name: %v", err)
	}
	if _, err := Find(ctx, a, "events.sqlite", openLog); !errors.Is(err, home.ErrBadName) {
		t.Errorf("a name the stores keep: %v", err)
	}
	// Whose a folder made before is cannot be told without reading it.
	write(t, a, "telegram-42", "telegram:42")
	if _, err := Find(ctx, a, "telegram:42", nil); !errors.Is(err, ErrNoOpener) {
		t.Errorf("no opener: %v", err)
	}
	bad := filepath.Join(a.Dir, "chats", "web-1")
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, eventlog.FileName), []byte("not an event\n"), 0o600)
	if dir, err := Find(ctx, a, "web:1", openLog); !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("a folder made before whose first event is damaged: %q, %v; want store.ErrCorrupt", dir, err)
	}
	// Nothing needs reading for a plain name, nor once the rule's folder
	// is there.
	if _, err := Find(ctx, a, "web-1", nil); err != nil {
		t.Errorf("a plain name, no opener: %v", err)
	}
	write(t, a, "web-1~q4sngohbeycjengb", "")
	if _, err := Find(ctx, a, "web:1", nil); err != nil {
		t.Errorf("the rule's folder there, no opener: %v", err)
	}
}

// BenchmarkFind is what every opener of a thread's folder pays to find
// it: nothing but the name's rule for a plain name, a stat for another
// whose folder is there, and a read of one event for a conversation made
// before the rule.
func BenchmarkFind(b *testing.B) {
	a := home.Agent{Name: "ada", Dir: b.TempDir()}
	write(b, a, "telegram-42~mxmekvd5hxz7cn2b", "telegram:42")
	write(b, a, "group-------", "group:日本")
	for _, thread := range []string{"web-1", "telegram:42", "group:日本"} {
		b.Run(thread, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Find(context.Background(), a, thread, openLog); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
