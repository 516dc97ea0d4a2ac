package facts

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/event"
)

// Link's file describes each model whole, so a field of Link's is never
// missing where another is known.
func TestLinkFile(t *testing.T) {
	link, err := linkFacts()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"anthropic/claude-opus-5-5", "anthropic/claude-sonnet-5", "openai/gpt-6-luna", "anthropic/claude-opus-5.5", "ollama/qwen3:8b"} {
		if _, ok := link[name]; !ok {
			t.Errorf("Link's file lacks %s", name)
		}
	}
	b := &Book{link: link}
	for name := range link {
		m := b.Model(name)
		for field, from := range map[string]Source{"provider": m.Provider.From, "window": m.Window.From, "answer": m.Answer.From,
			"input": m.Input.From, "output": m.Output.From, "cache_read": m.CacheRead.From, "cache_write": m.CacheWrite.From} {
			if from != Link {
				t.Errorf("%s: %s from %q, want Link's", name, field, from)
			}
		}
		if m.Answer.Value > m.Window.Value {
			t.Errorf("%s: answer %d over its window %d", name, m.Answer.Value, m.Window.Value)
		}
	}
	if b.Model("anthropic/claude-opus-5.5").Provider.Value != "openrouter" || b.Model("anthropic/claude-opus-5-5").Provider.Value != "anthropic" {
		t.Error("two names for one model are not each its provider's")
	}
}

func writeUser(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The user's file wins field by field: a field it sets, and only that.
func TestUserOverLink(t *testing.T) {
	path := writeUser(t, `
[models."anthropic/claude-opus-5-5"]
output = 30.0

[models."acme/new-model"]
window = 65_536
provider = "openrouter"
`)
	var c Cache
	b, err := c.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Model("anthropic/claude-opus-5-5")
	if m.Output != (Fact[float64]{30, User}) || m.Input != (Fact[float64]{5, Link}) || m.Window != (Fact[int]{1_000_000, Link}) || m.Provider.From != Link {
		t.Errorf("%+v", m)
	}
	n := b.Model("acme/new-model")
	if n.Window != (Fact[int]{65_536, User}) || n.Provider != (Fact[string]{"openrouter", User}) || n.Answer.Known() || n.Input.Known() {
		t.Errorf("a model newer than Link: %+v", n)
	}
	if u := b.Model("acme/unknown"); u.Window.Known() || u.Provider != (Fact[string]{"acme", Name}) {
		t.Errorf("a model nobody described: %+v", u)
	}
	if b.Path() != path {
		t.Errorf("path %q", b.Path())
	}
	// Again, unchanged: the same book from the cache, a new one without.
	if b2, _ := c.Load(path); b2 != b {
		t.Error("an unchanged file was read again")
	}
	if b3, _ := Load(path); b3 == b {
		t.Error("Load without a cache kept a book")
	}
	// None: Link's alone.
	none, err := Load(filepath.Join(t.TempDir(), FileName))
	if err != nil || none.Path() != "" || none.Model("anthropic/claude-opus-5-5").Output.Value != 25 {
		t.Errorf("no user file: %v", err)
	}
}

func TestBadFile(t *testing.T) {
	for _, tt := range []struct{ text, says string }{
		{"[models.\"a/b\"]\nwindw = 3\n", ":2: unknown key models.a/b.windw"},
		{"[models.\"a/b\"]\nwindow = -3\n", "window -3"},
		{"[models.\"a/b\"]\nwindow = \"big\"\n", ":2:"},
		{"[models.\"a/b\"]\ninput = nan\n", "input NaN"},
		{"[models.\"a/b\"]\nprovider = \"gemini\"\n", `provider "gemini"`},
		{"[models.\"ab\"]\nwindow = 3\n", "maker/model"},
		{"[models\n", ":1:"},
	} {
		_, err := Load(writeUser(t, tt.text))
		if !errors.Is(err, ErrBadFacts) || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), FileName) {
			t.Errorf("%q: %v, want %q", tt.text, err, tt.says)
		}
	}
}

func TestUserPath(t *testing.T) {
	p, err := UserPath(func(k string) string { return map[string]string{"LNK_HOME": "/h/lnk"}[k] })
	if err != nil || p != "/h/lnk/model-facts.toml" {
		t.Errorf("%q %v", p, err)
	}
	t.Setenv("HOME", "/home/ada")
	if p, _ := UserPath(func(string) string { return "" }); p != "/home/ada/.lnk/model-facts.toml" {
		t.Errorf("default %q", p)
	}
}

func known(window, answer int, from Source) Model {
	m := Model{Name: "a/b"}
	if window > 0 {
		m.Window = Fact[int]{window, from}
	}
	if answer > 0 {
		m.Answer = Fact[int]{answer, from}
	}
	return m
}

func TestWindow(t *testing.T) {
	w := settings.Defaults().Window
	set := func(max int, isSet bool) settings.Window { x := w; x.Max, x.MaxSet = max, isSet; return x }
	tests := []struct {
		name string
		m    Model
		w    settings.Window
		size int
		from Source
	}{
		{"Link's", known(200_000, 0, Link), w, 200_000, Link},
		{"the user's", known(50_000, 0, User), w, 50_000, User},
		{"nobody's", known(0, 0, ""), w, 32_768, Spec},
		{"Link's max held to the model's", known(8_192, 0, Runtime), set(100_000, false), 8_192, Runtime},
		{"Link's max under the model's", known(200_000, 0, Link), set(100_000, false), 100_000, Spec},
		{"Link's max, a model nobody described", known(0, 0, ""), set(2_048, false), 2_048, Spec},
		{"a max set is taken as set", known(8_192, 0, Runtime), set(100_000, true), 100_000, Agent},
		{"a max set under the model's", known(200_000, 0, User), set(50_000, true), 50_000, Agent},
	}
	for _, tt := range tests {
		size, from := Window(&tt.m, tt.w)
		if size != tt.size || from != tt.from {
			t.Errorf("%s: %d from %q, want %d from %q", tt.name, size, from, tt.size, tt.from)
		}
	}
}

func TestSetRuntime(t *testing.T) {
	tests := []struct {
		name          string
		m             Model
		trained, runs int
		want          Fact[int]
	}{
		{"trained counts up to the one it runs", known(40_960, 0, Link), 40_960, 4_096, Fact[int]{4_096, Runtime}},
		{"runs more than trained", known(40_960, 0, Link), 2_048, 8_192, Fact[int]{2_048, Runtime}},
		{"no trained window said", known(0, 0, ""), 0, 4_096, Fact[int]{4_096, Runtime}},
		{"the user's file says otherwise", known(32_768, 0, User), 40_960, 4_096, Fact[int]{32_768, User}},
		{"nothing said", known(40_960, 0, Link), 0, 0, Fact[int]{40_960, Link}},
	}
	for _, tt := range tests {
		tt.m.SetRuntime(tt.trained, tt.runs)
		if tt.m.Window != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, tt.m.Window, tt.want)
		}
	}
}

func TestAnswerRoom(t *testing.T) {
	s := settings.Defaults()
	withAnswer := s
	withAnswer.Model.Answer = 20_000
	tests := []struct {
		name string
		m    Model
		s    settings.Settings
		size int
		want int
	}{
		{"the window's share", known(0, 0, ""), s, 32_768, 4_096},
		{"at most the model's longest", known(1_000_000, 64_000, Link), s, 1_000_000, 64_000},
		{"[model] answer", known(200_000, 64_000, Link), withAnswer, 200_000, 20_000},
		{"[model] answer, at most the longest", known(200_000, 8_192, Link), withAnswer, 200_000, 8_192},
	}
	for _, tt := range tests {
		if got := AnswerRoom(&tt.m, &tt.s, tt.size); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestCost(t *testing.T) {
	b, _ := Load(filepath.Join(t.TempDir(), "none"))
	opus := b.Model("anthropic/claude-opus-5-5")
	// 1M input at $5, 100k output at $25, 2M cache reads at $0.50, 10k cache writes at $6.25.
	got := Cost(&opus, event.Usage{Input: 1_000_000, Output: 100_000, CacheRead: 2_000_000, CacheWrite: 10_000})
	if want := 5 + 2.5 + 1 + 0.0625; math.Abs(got-want) > 1e-9 {
		t.Errorf("opus: %v, want %v", got, want)
	}
	local := b.Model("ollama/qwen3:8b")
	nobody := b.Model("acme/x")
	if Cost(&local, event.Usage{Input: 1e6, Output: 1e6}) != 0 || Cost(&nobody, event.Usage{Input: 1e6}) != 0 {
		t.Error("a local or unknown model costs something")
	}
}

// A missing user's file is looked for by a stat of its folder, and each
// way of making it is seen at the next Load: in a folder made then, made
// again once removed, and through a symlink that led nowhere.
func TestCacheSeesFileMade(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "lnk")
	path := filepath.Join(dir, FileName)
	var c Cache
	// Each change is made settled: the folders' times are set back, each
	// time to another second long past, and the kernel's clock read a
	// second ahead, past the times Chtimes gives the folders' ctime.
	c.kernel = func() time.Time { return time.Now().Add(time.Second) }
	back := int64(1e9)
	settle := func() {
		t.Helper()
		for _, d := range []string{root, dir} {
			back++
			if err := os.Chtimes(d, time.Unix(back, 0), time.Unix(back, 0)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	want := func(step, want string) {
		t.Helper()
		b, err := c.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if b.Path() != want {
			t.Errorf("%s: the book read %q, want %q", step, b.Path(), want)
		}
	}
	write := func() {
		t.Helper()
		if err := os.WriteFile(path, []byte("[models.\"acme/m\"]\nwindow = 1000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	want("none", "")
	want("none, nothing changed", "")
	if files, folders := c.missing.Len(); files != 1 || folders != 1 {
		t.Errorf("%d missing files kept in %d folders, want 1 in 1", files, folders)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write()
	want("made in a folder made then", path)
	settle()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	want("removed", "")
	settle()
	want("removed, nothing changed", "")
	write()
	want("made again", path)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "facts.toml") // no folder on the way to path changes
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	settle()
	want("a symlink to nothing", "")
	want("a symlink to nothing, nothing changed", "")
	if err := os.WriteFile(target, []byte("[models.\"acme/m\"]\nwindow = 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want("its target made", path)
}
