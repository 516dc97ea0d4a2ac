package instructions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/settings"
)

// A prompt file that is missing is looked for by a stat of its folder, and
// each way of making it reaches the next turn's prompt: in a folder that
// was, in a folder made then, deep under folders made then, removed and
// made again, in a folder put in its folder's place.
func TestMissingFilesSeenNextTurn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ada")
	hometest.Populate(t, dir, "anthropic/claude-opus-5-5")
	for _, rel := range []string{"instructions/persona.md", "memory", "instructions/models"} {
		if err := os.RemoveAll(filepath.Join(dir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	c, a := &Cache{}, home.Agent{Name: "ada", Dir: dir}
	// Each change is made settled: the folders' times are set back, each
	// time to another second long past, and the kernel's clock read a
	// second ahead, past the times Chtimes gives the folders' ctime.
	c.Kernel = func() time.Time { return time.Now().Add(time.Second) }
	back := int64(1e9)
	settle := func() {
		t.Helper()
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			back++
			return os.Chtimes(p, time.Unix(back, 0), time.Unix(back, 0))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := settings.Read(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	compose := func() string {
		rd := &Reader{Cache: c, Agent: a}
		system, _ := rd.Compose(rd.Sections(&s, nil, ""))
		return system
	}
	const persona, notes, model = "You are Ada's clerk.", "The train is at six.", "Opus: be brief."
	want := func(step string, has ...string) {
		t.Helper()
		system := compose()
		for _, text := range []string{persona, notes, model} {
			if got, want := strings.Contains(system, text), strings.Contains(strings.Join(has, "\n"), text); got != want {
				t.Errorf("%s: %q in the prompt: %v, want %v", step, text, got, want)
			}
		}
	}

	settle()
	want("none there")
	want("nothing changed")
	if files, folders := c.missing.Len(); files != 3 || folders != 2 {
		t.Errorf("%d missing files kept in %d folders, want 3 in 2 (instructions and the home)", files, folders)
	}

	write("instructions/persona.md", persona)
	want("made in a folder that was", persona)
	settle()
	write("memory/notes.md", "- "+notes+"\n")
	want("made in a folder made then", persona, notes)
	settle()
	write("instructions/models/anthropic/claude-opus-5-5/instruction.md", model)
	want("made under folders made then", persona, notes, model)
	settle()

	if err := os.Remove(filepath.Join(dir, "instructions/persona.md")); err != nil {
		t.Fatal(err)
	}
	want("removed", notes, model)
	settle()
	want("removed, nothing changed", notes, model)
	write("instructions/persona.md", persona)
	want("made again", persona, notes, model)

	if err := os.Remove(filepath.Join(dir, "memory/notes.md")); err != nil {
		t.Fatal(err)
	}
	write("memory.new/notes.md", "- "+notes+"\n")
	settle()
	want("notes removed", persona, model)
	want("notes removed, nothing changed", persona, model)
	// os.Rename refuses a folder over a folder; rename(2) takes an empty one.
	if err := unix.Rename(filepath.Join(dir, "memory.new"), filepath.Join(dir, "memory")); err != nil {
		t.Fatal(err)
	}
	want("a folder put in its folder's place", persona, notes, model)
}

// A home without config.json has the defaults, told by its folder's stat
// while the folder is unchanged; a config.json made there is read at the
// next turn, and one removed gives the defaults again.
func TestMissingConfigSeenNextTurn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ada")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, a := &Cache{}, home.Agent{Name: "ada", Dir: dir}
	c.Kernel = func() time.Time { return time.Now().Add(time.Second) }
	config, _ := a.Path(home.Config, "")
	back := int64(1e9)
	settle := func() {
		t.Helper()
		back++
		if err := os.Chtimes(dir, time.Unix(back, 0), time.Unix(back, 0)); err != nil {
			t.Fatal(err)
		}
	}
	model := func(step string) string {
		t.Helper()
		s, err := (&Reader{Cache: c, Agent: a}).Settings(config)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return s.Model.Name
	}
	def := settings.Defaults().Model.Name
	settle()
	if got := model("none there"); got != def {
		t.Errorf("none there: model %q, want the default %q", got, def)
	}
	if got := model("nothing changed"); got != def {
		t.Errorf("nothing changed: model %q, want the default %q", got, def)
	}
	if files, _ := c.missing.Len(); files != 1 {
		t.Errorf("%d files kept missing, want config.json", files)
	}
	s := settings.Defaults()
	s.Model.Name = "openai/gpt-test"
	if err := settings.Write(filepath.Join(dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	settle()
	if got := model("made"); got != "openai/gpt-test" {
		t.Errorf("made: model %q, want openai/gpt-test", got)
	}
	if err := os.Remove(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	settle()
	if got := model("removed"); got != def {
		t.Errorf("removed: model %q, want the default %q", got, def)
	}
}

// A config.json unchanged since a turn read it is told by one stat and
// given as decoded, not read again; a changed one is read again, a bad
// one's error given each turn, and one changed within racyAge of its
// reading is not kept.
func TestConfigKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ada")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, a := &Cache{}, home.Agent{Name: "ada", Dir: dir}
	config, _ := a.Path(home.Config, "")
	later := func() time.Time { return time.Now().Add(time.Hour) }
	read := func(kernel func() time.Time) (settings.Settings, error) {
		c.Kernel = kernel
		return (&Reader{Cache: c, Agent: a}).Settings(config)
	}
	write := func(model string) {
		t.Helper()
		s := settings.Defaults()
		s.Model.Name = model
		if err := settings.Write(config, s); err != nil {
			t.Fatal(err)
		}
	}

	write("openai/gpt-one")
	if s, err := read(time.Now); err != nil || s.Model.Name != "openai/gpt-one" {
		t.Fatalf("just written: %q %v", s.Model.Name, err)
	}
	if e := c.peek(config); e != nil {
		t.Fatal("a config.json written within racyAge was kept")
	}
	if s, err := read(later); err != nil || s.Model.Name != "openai/gpt-one" {
		t.Fatalf("settled: %q %v", s.Model.Name, err)
	}
	e := c.peek(config)
	if e == nil || e.set == nil {
		t.Fatal("a settled config.json was not kept")
	}
	// What the cache holds is what an unchanged file gives: no read.
	marked := *e.set
	marked.Model.Name = "from the cache"
	c.put(config, &cached{key: e.key, set: &marked})
	if s, err := read(later); err != nil || s.Model.Name != "from the cache" {
		t.Fatalf("unchanged: %q %v, want what the cache holds", s.Model.Name, err)
	}

	write("openai/gpt-two")
	if s, err := read(later); err != nil || s.Model.Name != "openai/gpt-two" {
		t.Fatalf("changed: %q %v", s.Model.Name, err)
	}
	if err := os.WriteFile(config, []byte(`{"model": `), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, turn := range []string{"first", "second"} {
		if _, err := read(later); !errors.Is(err, settings.ErrBadSpec) {
			t.Fatalf("a bad config.json, %s turn: %v, want ErrBadSpec", turn, err)
		}
	}
	if e := c.peek(config); e == nil || e.err == nil {
		t.Error("a bad config.json was not kept with its error")
	}
}
