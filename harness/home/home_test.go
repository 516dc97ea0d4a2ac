package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/store"
)

func TestThreadDir(t *testing.T) {
	for _, tc := range []struct {
		thread, dir string
		bad         bool
	}{
		{"telegram:42", "telegram-42~mxmekvd5hxz7cn2b", false},
		{"plain-name_1.x", "plain-name_1.x", false},
		{"a/b", "", true},
		{"../x", "", true},
		{`a\b`, "", true},
		{"a\x00b", "", true},
		{"a\nb", "", true},
		{"..x", "..x", false},
		{"+1 555 0100", "-1-555-0100~43aixsmvswkjozyl", false},
		{"é", "--~jkmvk7sagpbvhhpc", false},
		{"", "", true},
		{".", "", true},
		{"..", "", true},
		{strings.Repeat("a", 200), strings.Repeat("a", 200), false},
		// The readable part cut so the folder's name is at most 200
		// bytes, the longest key a driver keeps; the hash of the whole.
		{strings.Repeat("a", 199) + ":", strings.Repeat("a", 183) + "~jjvzbtu5hyoll6ud", false},
		{strings.Repeat("a", 199) + ";", strings.Repeat("a", 183) + "~4fbc2ztt65tk7p6l", false},
		{strings.Repeat("a", 201), "", true},
		{strings.Repeat("a", 300), "", true},
	} {
		dir, err := ThreadDir(tc.thread)
		if tc.bad {
			if !errors.Is(err, ErrBadName) {
				t.Errorf("ThreadDir(%q) = %q, %v; want ErrBadName", tc.thread, dir, err)
			}
			continue
		}
		if err != nil || dir != tc.dir {
			t.Errorf("ThreadDir(%q) = %q, %v; want %q", tc.thread, dir, err, tc.dir)
		}
	}
}

func TestPath(t *testing.T) {
	a := Agent{Name: "ada", Dir: "/h/ada"}
	for _, tc := range []struct {
		p    Place
		name string
		want string
	}{
		{Config, "", "/h/ada/config.json"},
		{ToolLists, "", "/h/ada/tool-lists.json"},
		{Instruction, "", "/h/ada/instructions/instruction.md"},
		{Persona, "", "/h/ada/instructions/persona.md"},
		{Owner, "", "/h/ada/instructions/owner.md"},
		{ModelInstruction, "anthropic/claude-opus-5-5", "/h/ada/instructions/models/anthropic/claude-opus-5-5/instruction.md"},
		{ModelInstruction, "ollama/qwen3:8b", "/h/ada/instructions/models/ollama/qwen3:8b/instruction.md"},
		{Notes, "", "/h/ada/memory/notes.md"},
		{Skill, "pdf", "/h/ada/skills/pdf/SKILL.md"},
		{Files, "", "/h/ada/files"},
		{Chat, "telegram:42", "/h/ada/chats/telegram-42~mxmekvd5hxz7cn2b"},
		{ChatEvents, "telegram:42", "/h/ada/chats/telegram-42~mxmekvd5hxz7cn2b/events.jsonl"},
		{ChatFrames, "t", "/h/ada/chats/t/events.zst"},
		{ChatCopy, "t", "/h/ada/chats/t/chat.md"},
		{ChatTools, "t", "/h/ada/chats/t/tools.json"},
		{ChatEnd, "t", "/h/ada/chats/t/end"},
		{ChatPending, "t", "/h/ada/chats/t/pending"},
		{SQLite, "", "/h/ada/chats/events.sqlite"},
		{Harness, "", "/h/ada/harness.json"},
	} {
		got, err := a.Path(tc.p, tc.name)
		if err != nil || got != filepath.FromSlash(tc.want) {
			t.Errorf("Path(%d, %q) = %q, %v; want %q", tc.p, tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		p    Place
		name string
	}{
		{ModelInstruction, "nomaker"},
		{ModelInstruction, "../x"},
		{ModelInstruction, "a/../b"},
		{ModelInstruction, "a/b/c"},
		{ModelInstruction, "/b"},
		{Skill, "../x"},
		{Skill, "a/b"},
		{Skill, ""},
		{Chat, ".."},
		{Chat, ""},
		{Config, "x"},
	} {
		if got, err := a.Path(tc.p, tc.name); !errors.Is(err, ErrBadName) {
			t.Errorf("Path(%d, %q) = %q, %v; want ErrBadName", tc.p, tc.name, got, err)
		}
	}
	if _, err := (Agent{Name: "x"}).Path(Config, ""); !errors.Is(err, ErrBadName) {
		t.Errorf("an agent without a home: %v", err)
	}
}

// A thread whose folder would be a name a store or the harness keeps for
// itself under chats/ is refused by the one function that makes paths of
// names, whatever the place and the case; names beside them are taken.
func TestPathRefusesReservedNames(t *testing.T) {
	a := Agent{Name: "ada", Dir: "/h/ada"}
	for _, thread := range []string{
		"events.sqlite", "events.sqlite-wal", "events.sqlite-shm", "events.sqlite-journal",
		"events.pebble", "events.jsonl", "events.zst", "events.jsonl.torn", "events.zst.torn",
		"Events.SQLite", "EVENTS.PEBBLE", "events.", "events.anything a driver makes",
		"store.sqlite", "store.pebble", "store.", "Store.Kept",
		"chat.md", "Chat.MD", "tools.json", "end", "END", "pending", "Pending",
		"x.torn", "telegram:42.torn",
	} {
		for _, p := range []Place{Chat, ChatEvents, ChatFrames, ChatCopy, ChatTools, ChatEnd, ChatPending} {
			if got, err := a.Path(p, thread); !errors.Is(err, ErrBadName) {
				t.Errorf("Path(%d, %q) = %q, %v; want ErrBadName", p, thread, got, err)
			}
		}
	}
	for _, tc := range []struct{ thread, dir string }{
		{"events", "events"},
		{"events:sqlite", "events-sqlite~di7xuwv55le63aja"},
		{"my.events.sqlite", "my.events.sqlite"},
		{"store", "store"},
		{"chat.md.old", "chat.md.old"},
		{"ending", "ending"},
		{"pending:1", "pending-1~qow5klyu2x75ttoo"},
		{"x.torn.md", "x.torn.md"},
		// A conversion's folder is <dir>~convert, and no thread's folder
		// ends so: a '~' in it is the hash's.
		{"x~convert", "x-convert~4yccvvg3ikg3qk7d"},
	} {
		got, err := a.Path(Chat, tc.thread)
		if want := "/h/ada/chats/" + tc.dir; err != nil || got != filepath.FromSlash(want) {
			t.Errorf("Path(Chat, %q) = %q, %v; want %q", tc.thread, got, err, want)
		}
	}
}

// Every path stays inside the home, whatever the name.
func FuzzPathInside(f *testing.F) {
	for _, s := range []string{"telegram:42", "../../etc", "a/b", "ollama/qwen3:8b", "..", "x\x00y", "events.sqlite", "x~convert"} {
		f.Add(s)
	}
	a := Agent{Name: "ada", Dir: "/h/ada"}
	f.Fuzz(func(t *testing.T, name string) {
		for _, p := range []Place{ModelInstruction, Skill, Chat, ChatEvents, ChatPending} {
			got, err := a.Path(p, name)
			if err != nil {
				continue
			}
			rel, err := filepath.Rel(a.Dir, got)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
				t.Fatalf("Path(%d, %q) = %q leaves the home", p, name, got)
			}
			if p == Chat && (store.Reserved(filepath.Base(got)) || strings.HasSuffix(got, "~convert") || !IsThreadDir(filepath.Base(got))) {
				t.Fatalf("Path(Chat, %q) = %q, a name the stores keep", name, got)
			}
		}
	})
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	a := Agent{Name: "ada", Dir: dir}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "instructions"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "instructions", "instruction.md"), []byte("be brief"), 0o600))
	outside := t.TempDir()
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "instructions", "persona.md")))
	must(os.Symlink(outside, filepath.Join(dir, "memory")))

	p, _ := a.Path(Instruction, "")
	if b, err := a.ReadFile(p, 100); err != nil || string(b) != "be brief" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := a.ReadFile(p, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over its most: %v", err)
	}
	p, _ = a.Path(Persona, "")
	if b, err := a.ReadFile(p, 100); !errors.Is(err, ErrBadName) {
		t.Errorf("through a symlinked file: %q, %v", b, err)
	}
	if b, err := a.ReadFile(filepath.Join(dir, "memory", "secret"), 100); !errors.Is(err, ErrBadName) {
		t.Errorf("through a symlinked folder: %q, %v", b, err)
	}
	if b, err := a.ReadFile(filepath.Join(dir, "..", "x"), 100); !errors.Is(err, ErrBadName) {
		t.Errorf("outside the home: %q, %v", b, err)
	}
	p, _ = a.Path(Owner, "")
	if _, err := a.ReadFile(p, 100); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	a := Agent{Name: "ada", Dir: dir}
	if err := os.MkdirAll(filepath.Join(dir, "skills", "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "skills", "b")); err != nil {
		t.Fatal(err)
	}
	p, _ := a.Path(Skills, "")
	f, err := a.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil || len(names) != 2 {
		t.Fatalf("the skills folder lists %q, %v", names, err)
	}
	if _, err := a.Open(filepath.Join(p, "b")); !errors.Is(err, ErrBadName) {
		t.Errorf("a symlinked folder opened: %v", err)
	}
	if _, err := a.Open(filepath.Join(dir, "..")); !errors.Is(err, ErrBadName) {
		t.Errorf("outside the home opened: %v", err)
	}
}

// join is filepath.Join for Path's checked names, whatever the home's
// folder: clean or not, absolute or relative, the root.
func TestJoin(t *testing.T) {
	parts := []string{"chats", "telegram-42", "events.jsonl"}
	for _, dir := range []string{"/h/ada", "/h/ada/", "/h//ada", "/h/./ada", "/h/x/../ada", "/", "h/ada", "./ada", "", "/a"} {
		if got, want := join(dir, parts), filepath.Join(append([]string{dir}, parts...)...); got != want {
			t.Errorf("join(%q) = %q, want %q", dir, got, want)
		}
	}
}

// A name or a size home refuses is store's error too (store.ErrBadName,
// store.ErrTooLarge), as a store's refusal is: a caller maps it to one
// answer, whoever refused.
func TestErrorsAreStores(t *testing.T) {
	a := Agent{Name: "ada", Dir: filepath.Join(t.TempDir(), "home")}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	config, _ := a.Path(Config, "")
	if err := os.WriteFile(config, []byte(`{"x":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		err         error
		store, home error
	}{
		{"a file over its most", func() error { _, err := a.ReadFile(config, 3); return err }(), store.ErrTooLarge, ErrTooLarge},
		{"a thread name with a slash", func() error { _, err := a.Path(Chat, "a/b"); return err }(), store.ErrBadName, ErrBadName},
		{"an empty thread name", func() error { _, err := a.Path(ChatEvents, ""); return err }(), store.ErrBadName, ErrBadName},
		{"a model name", func() error { _, err := a.Path(ModelInstruction, "nomaker"); return err }(), store.ErrBadName, ErrBadName},
	} {
		if !errors.Is(tc.err, tc.store) || !errors.Is(tc.err, tc.home) {
			t.Errorf("%s: %v is not %v and %v", tc.name, tc.err, tc.store, tc.home)
		}
	}
}

// The folder the rule before made of a name is told where it is another
// than the rule's; folders of either rule are told from a store's or a
// conversion's.
func TestFormerThreadDir(t *testing.T) {
	for _, tc := range []struct {
		thread, dir string
		ok          bool
	}{
		{"telegram:42", "telegram-42", true},
		{"Web1", "Web1", true},
		{"group:日本", "group-------", true},
		{"web-1", "", false}, // plain: the same folder under both
		{"a/b", "", false},
		{"events.x:1", "", false}, // its folder would bear a store's name
	} {
		dir, ok := FormerThreadDir(tc.thread)
		if dir != tc.dir || ok != tc.ok {
			t.Errorf("FormerThreadDir(%q) = %q, %v; want %q, %v", tc.thread, dir, ok, tc.dir, tc.ok)
		}
	}
	for name, want := range map[string]bool{
		"web-1":                               true,
		"Web1":                                true,
		"telegram-42":                         true,
		"telegram-42~mxmekvd5hxz7cn2b":        true,
		"-~xnzarpe3lv6aj4jd":                  true,
		"telegram-42~convert":                 false,
		"telegram-42~MXMEKVD5HXZ7CN2B":        false,
		"x~mxmekvd5hxz7cn2":                   false,
		"x~mxmekvd5hxz7cn2b~mxmekvd5hxz7cn2b": false,
		"~mxmekvd5hxz7cn2b":                   false,
		"a:b":                                 false,
		"events.sqlite":                       false,
		"events.pebble":                       false,
		"chat.md":                             false,
		"":                                    false,
		".":                                   false,
		"..":                                  false,
		strings.Repeat("a", 183) + "~mxmekvd5hxz7cn2b": true,
		strings.Repeat("a", 184) + "~mxmekvd5hxz7cn2b": false,
		strings.Repeat("a", 201):                       false,
	} {
		if got := IsThreadDir(name); got != want {
			t.Errorf("IsThreadDir(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestChatDirAndIn(t *testing.T) {
	a := Agent{Name: "ada", Dir: "/h/ada"}
	if got, err := a.ChatDir("telegram-42"); err != nil || got != "/h/ada/chats/telegram-42" {
		t.Errorf("ChatDir(telegram-42) = %q, %v", got, err)
	}
	for _, bad := range []string{"..", "a/b", "events.sqlite", "x~convert", ""} {
		if got, err := a.ChatDir(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("ChatDir(%q) = %q, %v; want ErrBadName", bad, got, err)
		}
	}
	for p, want := range map[Place]string{
		Chat: "/h/ada/chats/a-b", ChatEvents: "/h/ada/chats/a-b/events.jsonl", ChatFrames: "/h/ada/chats/a-b/events.zst",
		ChatCopy: "/h/ada/chats/a-b/chat.md", ChatTools: "/h/ada/chats/a-b/tools.json", ChatEnd: "/h/ada/chats/a-b/end",
		ChatPending: "/h/ada/chats/a-b/pending",
	} {
		if got, err := In("/h/ada/chats/a-b", p); err != nil || got != want {
			t.Errorf("In(%d) = %q, %v; want %q", p, got, err, want)
		}
	}
	if got, err := In("/h/ada/chats/a-b", Config); !errors.Is(err, ErrBadName) {
		t.Errorf("In(Config) = %q, %v; want ErrBadName", got, err)
	}
	if got, err := In("", ChatCopy); !errors.Is(err, ErrBadName) {
		t.Errorf("In of no folder = %q, %v; want ErrBadName", got, err)
	}
}
