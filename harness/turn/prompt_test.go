package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/loadgen/scripted"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s\nwant:\n%s", name, got, want)
	}
}

var toolsFixture = []prompt.ToolText{
	{Tool: "scheduler", Text: "Schedule with scheduler__at; a subagent answers in its own thread."},
	{Tool: "memory", Text: "remember writes a note to your notes, a line a note; forget takes one out."},
}

// The exact request bytes of a fully populated agent, for each format: the
// second turn of a conversation, its tools offering their words.
func TestRequestGolden(t *testing.T) {
	for _, modelName := range []string{"anthropic/claude-opus-5-5", "openai/gpt-6-luna"} {
		provider, _, _ := strings.Cut(modelName, "/")
		t.Run(provider, func(t *testing.T) {
			r, m := newRunner(t, &scripted.Script{Rules: []scripted.Rule{{Text: "Nothing is on today."}}})
			at := time.Date(2026, 12, 2, 10, 45, 0, 0, time.UTC)
			r.Now = func() time.Time { return at }
			hometest.Populate(t, r.Agent.Dir, modelName)
			ctx := context.Background()
			from := Message{From: fromAda, Owner: true, Connection: "telegram"}
			first := from
			first.ID, first.Text = "1", "What is on today?"
			if _, err := r.Message(ctx, "telegram:42", first, nil); err != nil {
				t.Fatal(err)
			}
			second := from
			second.ID, second.Text = "2", "And tomorrow?"
			body := turnWithTools(t, r, m, "telegram:42", second, toolsFixture)
			// The home's folder, and the time in the machine's zone, as
			// they would be on a machine in UTC.
			body = bytes.ReplaceAll(body, []byte(r.Agent.Dir), []byte("/home/ada"))
			const layout = "Mon 2006-01-02 15:04 MST"
			body = bytes.ReplaceAll(body, []byte(at.Local().Format(layout)), []byte(at.Format(layout)))
			golden(t, "request_"+provider+".golden", body)
		})
	}
}

var fromAda = struct{ ID, Name string }{"ada", "Ada"}

// turnWithTools takes a turn as run does, with the tools offering tools'
// words (the tools work sets them on the turn), and returns the request's
// bytes.
func turnWithTools(t *testing.T, r *Runner, m *scripted.Server, thread string, msg Message, tools []prompt.ToolText) []byte {
	t.Helper()
	ctx := context.Background()
	dir, _ := r.Agent.Path(home.Chat, thread)
	tt := &turn{r: r, c: r.caches(), thread: thread, dir: dir, tools: toolUse{words: tools}}
	defer tt.close()
	s, err := tt.settings()
	if err != nil {
		t.Fatal(err)
	}
	if err := tt.open(ctx, "log"); err != nil {
		t.Fatal(err)
	}
	if err := tt.appendMessage(ctx, &msg, nil); err != nil {
		t.Fatal(err)
	}
	system, stable := prompt.Compose(tt.sections(s, &msg))
	size, room, err := tt.facts().Window(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	events, _, err := tt.readWindow(ctx, size)
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{
		Model: model.OwnName(s.Provider(), s.Model.Name), System: system, Messages: prompt.Messages(events),
		MaxTokens: room, Window: size, SystemStable: stable, CacheKey: prompt.CacheKey(r.Agent.Name, thread),
	}
	if _, err := tt.callModel(ctx, s, req, nil); err != nil {
		t.Fatal(err)
	}
	return []byte(lastRequest(t, m))
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// jsonString is s as the request holds it.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Fifty turns with nothing changed: each request is the previous one's
// bytes up to the newest message, and more. The shared prefix is at least
// 99% of the previous request's bytes on every turn: the figure in
// BENCHMARKS.md, "Current figures".
func TestPrefixKept(t *testing.T) {
	for _, modelName := range []string{"anthropic/claude-opus-5-5", "openai/gpt-6-luna", "openrouter/anthropic-claude"} {
		provider, _, _ := strings.Cut(modelName, "/")
		t.Run(provider, func(t *testing.T) {
			r, m := newRunner(t, nil)
			hometest.Populate(t, r.Agent.Dir, modelName)
			ctx := context.Background()
			var prev []byte
			worst, total, reused := 1.0, 0, 0
			for i := 1; i <= 50; i++ {
				text := fmt.Sprintf("message number %d, about the day's plans", i)
				if _, err := r.Message(ctx, "telegram:42", Message{ID: fmt.Sprint(i), Text: text, From: fromAda, Owner: true, Connection: "telegram"}, nil); err != nil {
					t.Fatal(err)
				}
				cur := []byte(lastRequest(t, m))
				if prev != nil {
					n := commonPrefix(prev, cur)
					last := fmt.Sprintf("message number %d, about the day's plans", i-1)
					if end := bytes.LastIndex(prev, []byte(jsonString(last))) + len(last); n < end {
						t.Fatalf("turn %d: the request changed at byte %d, before the newest message's end at %d:\nprev %s\ncur  %s", i, n, end, prev[n:min(len(prev), n+80)], cur[n:min(len(cur), n+80)])
					}
					share := float64(n) / float64(len(prev))
					worst = min(worst, share)
					total += len(prev)
					reused += n
					if share < 0.99 {
						t.Errorf("turn %d: %.2f%% of the previous request's %d bytes reused, under 99%%", i, 100*share, len(prev))
					}
				}
				prev = cur
			}
			t.Logf("%s: 49 turns, the previous request's bytes reused: worst %.2f%%, overall %.2f%%, last request %d bytes", provider, 100*worst, 100*float64(reused)/float64(total), len(prev))
		})
	}
}

// systemOf returns a request's system prompt, its blocks joined.
func systemOf(t *testing.T, body string) string {
	t.Helper()
	var req struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, b := range req.System {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n\n")
}

// A new note changes the request only from the notes section on.
func TestNoteChangesOnlyFromNotes(t *testing.T) {
	r, m := newRunner(t, nil)
	hometest.Populate(t, r.Agent.Dir, "anthropic/claude-opus-5-5")
	os.Remove(filepath.Join(r.Agent.Dir, "memory", "notes.md"))
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{Text: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	before := lastRequest(t, m)
	if strings.Contains(before, prompt.NotesHeading) {
		t.Fatal("a notes section without a notes file")
	}
	os.WriteFile(filepath.Join(r.Agent.Dir, "memory", "notes.md"), []byte("- The train is at six.\n"), 0o600)
	if _, err := r.Message(ctx, "t", Message{Text: "two"}, nil); err != nil {
		t.Fatal(err)
	}
	after := lastRequest(t, m)
	notes := strings.Index(after, prompt.NotesHeading)
	if notes < 0 {
		t.Fatal("no notes section")
	}
	if n := commonPrefix([]byte(before), []byte(after)); n < notes || n >= notes+len(prompt.NotesHeading) {
		t.Errorf("the request changed at byte %d, the notes section starts at %d:\n%s", n, notes, after[min(n, notes):min(n, notes)+60])
	}
	// An emptied file is no section at all.
	os.WriteFile(filepath.Join(r.Agent.Dir, "memory", "notes.md"), nil, 0o600)
	if _, err := r.Message(ctx, "t", Message{Text: "three"}, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(lastRequest(t, m), prompt.NotesHeading) {
		t.Error("an empty notes file makes a section")
	}
}

// Changing the model changes the model's section and nothing before or
// after it; a fallback's system prompt is the same, with its own file.
func TestModelChangesOnlyItsSection(t *testing.T) {
	r, m := newRunner(t, nil)
	hometest.Populate(t, r.Agent.Dir, "anthropic/claude-opus-5-5")
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{Text: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	opus := systemOf(t, lastRequest(t, m))
	s := settings.Defaults()
	s.Model.Name = "anthropic/claude-sonnet-5"
	settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s)
	if _, err := r.Message(ctx, "t", Message{Text: "two"}, nil); err != nil {
		t.Fatal(err)
	}
	sonnet := systemOf(t, lastRequest(t, m))
	const opusText, sonnetText = "Opus: think before calling a tool; keep answers short.", "Sonnet: answer at once when no tool is needed."
	at := strings.Index(opus, opusText)
	if at < 0 || opus[:at] != sonnet[:at] || opus[at+len(opusText):] != sonnet[at+len(sonnetText):] || sonnet[at:at+len(sonnetText)] != sonnetText {
		t.Fatalf("more than the model's section changed:\n%s\n----\n%s", opus, sonnet)
	}
	if !strings.HasPrefix(opus, strings.TrimSpace(prompt.Base)) {
		t.Error("the base does not lead")
	}

	// The fallback: the same sections, the fallback model's file in place.
	tt := &turn{r: r, c: r.caches(), thread: "t"}
	st, _ := tt.settings()
	sections := tt.sections(st, &Message{})
	first, firstStable := prompt.Compose(sections)
	fb, fbStable := tt.systemFor(st, sections, "openai/gpt-6-luna")
	const lunaText = "Luna: use the tools' own words for their results."
	at = strings.Index(first, sonnetText)
	if at < 0 || fb[:at] != first[:at] || fb[at:at+len(lunaText)] != lunaText || fb[at+len(lunaText):] != first[at+len(sonnetText):] {
		t.Errorf("the fallback's system prompt:\n%s", fb)
	}
	if fbStable-firstStable != len(lunaText)-len(sonnetText) {
		t.Errorf("stable parts %d and %d", firstStable, fbStable)
	}
	if none, _ := tt.systemFor(st, sections, "anthropic/no-file"); strings.Contains(none, "Sonnet") || strings.Contains(none, "Luna") {
		t.Error("a model with no file has another's")
	}
}

// logTo sends r's log to a buffer for a test.
func logTo(r *Runner) *hometest.Logs {
	var b hometest.Logs
	r.Log = slog.New(slog.NewTextHandler(&b, nil))
	return &b
}

// Bad input leaves out what it spoils, says so in the log, and the turn
// runs.
func TestBadInputLeftOut(t *testing.T) {
	r, m := newRunner(t, nil)
	log := logTo(r)
	r.caches().prompts.Kernel = func() time.Time { return time.Now().Add(time.Hour) } // past the racy age of the files just written
	dir := r.Agent.Dir
	hometest.Populate(t, dir, "anthropic/claude-opus-5-5")
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("THE SECRET"), 0o600)
	os.Remove(filepath.Join(dir, "instructions", "owner.md"))
	os.Symlink(outside, filepath.Join(dir, "instructions", "owner.md"))
	os.WriteFile(filepath.Join(dir, "instructions", "instruction.md"), []byte("caf\xe9 cr\xe8me"), 0o600)
	os.MkdirAll(filepath.Join(dir, "skills", "broken"), 0o700)
	os.WriteFile(filepath.Join(dir, "skills", "broken", "SKILL.md"), []byte("---\nname: broken\ndescription: never closed\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "skills", "nameless"), 0o700)
	os.WriteFile(filepath.Join(dir, "skills", "nameless", "SKILL.md"), []byte("---\ndescription: no name\n---\n"), 0o600)
	os.Symlink(filepath.Dir(outside), filepath.Join(dir, "skills", "elsewhere"))
	os.Symlink(outside, filepath.Join(dir, "files", "notes", "AGENTS.md")) // CLAUDE.md is read in its place
	s := settings.Defaults()
	s.Instructions = map[string]settings.Section{
		"persona": {Most: 100},
		"now":     {Source: "https://example.com/now.md"},
	}
	settings.Write(filepath.Join(dir, "config.json"), s)

	for i := range 2 {
		if _, err := r.Message(context.Background(), "t", Message{Text: fmt.Sprint("hello ", i)}, nil); err != nil {
			t.Fatalf("the turn did not run: %v", err)
		}
	}
	req := lastRequest(t, m)
	for _, gone := range []string{"THE SECRET", "caf", "Who you are", "broken", "nameless", "# Now"} {
		if strings.Contains(req, gone) {
			t.Errorf("the request holds %q", gone)
		}
	}
	for _, kept := range []string{"- csv: Read, sort and sum CSV files.", "- pdf: Fill and read PDF forms.", "## notes/CLAUDE.md", "# Your notes"} {
		if !strings.Contains(req, jsonString(kept)) {
			t.Errorf("the request lacks %q", kept)
		}
	}
	got := log.String()
	for _, says := range []string{
		"section=owner", "a symlink on the way",
		"section=instruction", "not UTF-8",
		"section=persona", "raise [instructions] persona most",
		"section=skills", "no closing", "no name", "skills/elsewhere", "make it a folder",
		"files/notes/AGENTS.md",
		"section=now", "a link is not read",
	} {
		if !strings.Contains(got, says) {
			t.Errorf("the log does not say %q:\n%s", says, got)
		}
	}
	// What is wrong with a file's contents is said once per version of it.
	if n := strings.Count(got, "no closing"); n != 1 {
		t.Errorf("the broken skill is logged %d times over two turns", n)
	}
}

// The skills' metadata is read through the store at each turn, and parsed
// only when the file changed.
func TestSkillsCachedUntilChanged(t *testing.T) {
	r, _ := newRunner(t, nil)
	dir := r.Agent.Dir
	hometest.Populate(t, dir, "anthropic/claude-opus-5-5")
	r.caches().prompts.Kernel = func() time.Time { return time.Now().Add(time.Hour) } // past the racy age of the files just written
	s, _ := settings.Read(filepath.Join(dir, "config.json"))
	compose := func() (string, int64) {
		tt := &turn{r: r, c: r.caches(), thread: "t"}
		system, _ := tt.compose(tt.sections(&s, &Message{}))
		return system, tt.read
	}
	first, read := compose()
	if read == 0 {
		t.Fatal("nothing read")
	}
	again, read := compose()
	if again != first || read != 0 {
		t.Fatalf("nothing changed, yet %d bytes read", read)
	}
	os.WriteFile(filepath.Join(dir, "skills", "pdf", "SKILL.md"), []byte("---\nname: pdf\ndescription: Only read PDFs.\n---\n"), 0o600)
	changed, read := compose()
	if !strings.Contains(changed, "- pdf: Only read PDFs.") || read == 0 || read > 100 {
		t.Errorf("after the change, %d bytes read:\n%s", read, changed)
	}
	if n, b := r.caches().prompts.Len(); n > 32 || b > 16<<10 {
		t.Errorf("the cache holds %d entries, %d bytes", n, b)
	}
}

// A folder's AGENTS.md found unchanged is taken with one lstat; every
// change to the folder's instructions still reaches the next turn's prompt.
func TestRepositoryFollowsChanges(t *testing.T) {
	r, _ := newRunner(t, nil)
	log := logTo(r)
	dir := r.Agent.Dir
	hometest.Populate(t, dir, "anthropic/claude-opus-5-5")
	r.caches().prompts.Kernel = func() time.Time { return time.Now().Add(time.Hour) } // past the racy age of the files just written
	s, _ := settings.Read(filepath.Join(dir, "config.json"))
	engine := filepath.Join(dir, "files", "engine")
	for _, step := range []struct {
		name   string
		change func()
		has    []string
		lacks  []string
	}{
		{"as written", func() {}, []string{"## engine/AGENTS.md", "Run go test"}, []string{"See AGENTS.md"}},
		{"AGENTS.md removed", func() { os.Remove(filepath.Join(engine, "AGENTS.md")) },
			[]string{"## engine/CLAUDE.md", "See AGENTS.md"}, []string{"Run go test"}},
		{"AGENTS.md a symlink", func() { os.Symlink(filepath.Join(dir, "files", "AGENTS.md"), filepath.Join(engine, "AGENTS.md")) },
			[]string{"## engine/CLAUDE.md"}, []string{"## engine/AGENTS.md"}},
		{"AGENTS.md back", func() {
			os.Remove(filepath.Join(engine, "AGENTS.md"))
			os.WriteFile(filepath.Join(engine, "AGENTS.md"), []byte("Run make.\n"), 0o600)
		}, []string{"## engine/AGENTS.md", "Run make."}, []string{"See AGENTS.md", "Run go test"}},
		{"AGENTS.md changed in place", func() {
			os.WriteFile(filepath.Join(engine, "AGENTS.md"), []byte("Run make check.\n"), 0o600)
		}, []string{"Run make check."}, []string{"Run make.\n"}},
		{"a new folder", func() {
			os.MkdirAll(filepath.Join(dir, "files", "app"), 0o700)
			os.WriteFile(filepath.Join(dir, "files", "app", "AGENTS.md"), []byte("The app.\n"), 0o600)
		}, []string{"## app/AGENTS.md", "The app."}, nil},
	} {
		step.change()
		for range 2 { // the second turn finds it all unchanged
			tt := &turn{r: r, c: r.caches(), thread: "t"}
			system, _ := tt.compose(tt.sections(&s, &Message{}))
			for _, want := range step.has {
				if !strings.Contains(system, want) {
					t.Errorf("%s: the prompt lacks %q", step.name, want)
				}
			}
			for _, gone := range step.lacks {
				if strings.Contains(system, gone) {
					t.Errorf("%s: the prompt holds %q", step.name, gone)
				}
			}
		}
	}
	if !strings.Contains(log.String(), "engine/AGENTS.md") {
		t.Errorf("the symlink is not in the log:\n%s", log)
	}
}

// The tools' section holds only the tools offered, each under its name.
func TestToolsSection(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := settings.Defaults()
	tt := &turn{r: r, c: r.caches(), thread: "t", tools: toolUse{words: toolsFixture[1:]}}
	system, _ := prompt.Compose(tt.sections(&s, &Message{}))
	if !strings.Contains(system, "## memory\n\nremember writes") || strings.Contains(system, "scheduler") {
		t.Errorf("the tools' section:\n%s", system)
	}
	base := strings.Index(system, "You are an agent on Link")
	tools := strings.Index(system, "# What your tools say")
	env := strings.Index(system, "# Your environment")
	if !(base >= 0 && base < tools && tools < env) {
		t.Errorf("sections out of order: base %d, tools %d, environment %d", base, tools, env)
	}
}

// composeWarm is a turn's composition with nothing changed since the last.
func composeWarm(tb testing.TB) func() {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "ada")
	hometest.Populate(tb, dir, "anthropic/claude-opus-5-5")
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}}
	// The files just written are kept as they will be once they are older
	// than the racy age: the prompt cache's clock set an hour ahead.
	r.caches().prompts.Kernel = func() time.Time { return time.Now().Add(time.Hour) }
	s, err := settings.Read(filepath.Join(dir, "config.json"))
	if err != nil {
		tb.Fatal(err)
	}
	m := &Message{Text: "hi", Connection: "telegram"}
	tt := &turn{r: r, c: r.caches(), thread: "t", tools: toolUse{words: toolsFixture}}
	tt.compose(tt.sections(&s, m))
	return func() {
		tt.read = 0
		system, stable := tt.compose(tt.sections(&s, m))
		if tt.read != 0 || stable == 0 || len(system) < 4096 {
			tb.Fatalf("nothing changed, yet %d bytes read; %d of %d stable", tt.read, stable, len(system))
		}
	}
}

// The allocations of composing with nothing changed: a budget, exact, so a
// change that adds some fails here.
func TestComposeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	run := composeWarm(t)
	const budget = 12
	if n := testing.AllocsPerRun(100, run); n > budget {
		t.Errorf("composing with nothing changed allocates %.0f times, over %d", n, budget)
	} else {
		t.Logf("%.0f allocations", n)
	}
}

func BenchmarkCompose(b *testing.B) {
	run := composeWarm(b)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

// BenchmarkComposeJoin is the join alone, the sections already read.
func BenchmarkComposeJoin(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "ada")
	hometest.Populate(b, dir, "anthropic/claude-opus-5-5")
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}}
	s, _ := settings.Read(filepath.Join(dir, "config.json"))
	sections := (&turn{r: r, c: r.caches(), thread: "t", tools: toolUse{words: toolsFixture}}).sections(&s, &Message{})
	b.ReportAllocs()
	for b.Loop() {
		prompt.Compose(sections)
	}
}
