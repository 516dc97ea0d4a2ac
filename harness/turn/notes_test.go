package turn

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/summary"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/memory"
	"lnk.dev/linkharness/store/event"
)

// notesRunner is a runner whose agent has a small window and the memory
// tool over its home, answering summaries' requests by saving a note
// first, then summarizing.
func notesRunner(t *testing.T, saveNotes bool) *Runner {
	t.Helper()
	r, _ := newRunner(t, nil)
	mem := httptest.NewServer(server.NewStreamableHTTPServer(memory.New(r.Agent.Dir, nil)))
	t.Cleanup(mem.Close)
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "memory", URL: mem.URL}}, tools.Options{})
	t.Cleanup(r.Tools.Close)
	s := settings.Defaults()
	s.Window.Max, s.Window.MaxSet, s.Window.CompactAt, s.Window.SaveNotes = 2048, true, 0.001, saveNotes
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	return r
}

const notesScript = `
[[rule]]
match = "save it to your notes"
results = "no"
text = "Saving first."
[[rule.call]]
name = "memory__remember"
args = '{"note":"Ada takes her tea without sugar."}'
[[rule.call]]
name = "memory__forget"
args = '{"note":"anything"}'

[[rule]]
match = "Write a summary of what leaves"
text = "Summary: Ada spoke of tea."
`

// Where the agent can write notes and its owner spoke, the summary's
// continuation may first save notes, and only notes: the model's call of
// memory__remember is run, its other call answered unrun, both kept with
// the summary, in requests that each continue the one before; the next
// turn's instructions hold the note.
func TestSummarySavesNotesFirst(t *testing.T) {
	r := notesRunner(t, true)
	rec := recordRequests(t, r, parseScript(t, notesScript))
	ctx := context.Background()
	for i := range 3 {
		if _, err := r.Message(ctx, "t", Message{ID: fmt.Sprint(i), Text: fmt.Sprintf("message %d about tea", i), Owner: true, From: fromAda}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ev := readEvents(t, r, "t")
	sums := ofType(ev, event.TypeSummary)
	if len(sums) == 0 {
		t.Fatal("no summary")
	}
	s := sums[0]
	if s.Text != "Summary: Ada spoke of tea." || len(s.Calls) != 2 || s.Calls[0].Name != prompt.NotesTool || s.Calls[1].Name != "memory__forget" {
		t.Fatalf("summary %+v", s)
	}
	notes, err := os.ReadFile(filepath.Join(r.Agent.Dir, "memory", "notes.md"))
	if err != nil || !strings.Contains(string(notes), "Ada takes her tea without sugar.") {
		t.Fatalf("notes: %q %v", notes, err)
	}
	// The requests of the first summary: the answer's, the summary's with
	// its notes, and the one after the notes, each continuing the last.
	reqs := rec.take()
	var chain [][]byte
	for i, b := range reqs {
		if strings.Contains(string(b), "save it to your notes") {
			chain = append(chain, reqs[i-1], b)
			if i+1 < len(reqs) {
				chain = append(chain, reqs[i+1])
			}
			break
		}
	}
	if len(chain) != 3 {
		t.Fatalf("the summary's requests: %d", len(chain))
	}
	for i := 1; i < len(chain); i++ {
		prev, cur := chain[i-1], chain[i]
		if p := commonPrefix(prev, cur); p < len(prev)-len("]}") {
			t.Errorf("request %d does not continue the one before: they part at byte %d of %d", i, p, len(prev))
		}
		if !strings.Contains(string(cur), `"name":"memory__remember"`) {
			t.Errorf("request %d does not offer the tools", i)
		}
	}
	if !strings.Contains(string(chain[2]), jsonString(summary.NotesOnly)) {
		t.Errorf("the call of another tool was not answered unrun")
	}
	// The next turn composes its instructions with the note.
	if _, err := r.Message(ctx, "t", Message{ID: "next", Text: "and now?", Owner: true, From: fromAda}, nil); err != nil {
		t.Fatal(err)
	}
	reqs = rec.take()
	if !strings.Contains(string(reqs[0]), "Ada takes her tea without sugar.") {
		t.Errorf("the next turn's instructions lack the note")
	}
}

// No notes are saved from a conversation the owner never spoke in, nor
// with save_notes off: the ask does not offer it.
func TestSummaryNoNotes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		saveNotes bool
		owner     bool
	}{
		{"save_notes off", false, true},
		{"others' messages alone", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := notesRunner(t, tc.saveNotes)
			rec := recordRequests(t, r, parseScript(t, notesScript))
			for i := range 3 {
				if _, err := r.Message(context.Background(), "t", Message{ID: fmt.Sprint(i), Text: fmt.Sprintf("message %d about tea", i), Owner: tc.owner, From: fromAda}, nil); err != nil {
					t.Fatal(err)
				}
			}
			asked := 0
			for _, b := range rec.take() {
				if strings.Contains(string(b), "save it to your notes") {
					t.Fatalf("notes asked for")
				}
				if strings.Contains(string(b), "Write a summary of what leaves") {
					asked++
				}
			}
			sums := ofType(readEvents(t, r, "t"), event.TypeSummary)
			if asked == 0 || len(sums) != asked || len(sums[0].Calls) != 0 {
				t.Errorf("%d asked, summaries %+v", asked, sums)
			}
			if _, err := os.Stat(filepath.Join(r.Agent.Dir, "memory", "notes.md")); !os.IsNotExist(err) {
				t.Errorf("notes written: %v", err)
			}
		})
	}
}

// A turn whose calls fill its window saves notes first too, in the
// summary it asks before going on, and composes its instructions again
// before its next request: that request's instructions hold the note.
func TestSummaryFirstSavesNotes(t *testing.T) {
	web, _ := webServer(t)
	r, _ := newRunner(t, nil)
	mem := httptest.NewServer(server.NewStreamableHTTPServer(memory.New(r.Agent.Dir, nil)))
	t.Cleanup(mem.Close)
	r.Tools = tools.New(r.Agent, []tools.Server{{Name: "memory", URL: mem.URL}, {Name: "web", URL: web}}, tools.Options{})
	t.Cleanup(r.Tools.Close)
	s := settings.Defaults()
	s.Window.Max, s.Window.MaxSet = 24000, true
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	rec := recordRequests(t, r, parseScript(t, `
[[rule]]
match = "filled your window"
results = "no"
[[rule.call]]
name = "memory__remember"
args = '{"note":"Ada reads the big pages on Mondays."}'

[[rule]]
match = "filled your window"
results = "yes"
text = "Summary: Ada asked for the large pages read, and the digging goes on."

[[rule]]
match = "dig"
text = "digging"
[[rule.call]]
name = "web__big"
`))
	if _, err := r.Message(context.Background(), "t", Message{Text: "dig through the big pages", Owner: true, From: fromAda}, nil); err != nil {
		t.Fatal(err)
	}
	sums := ofType(readEvents(t, r, "t"), event.TypeSummary)
	if len(sums) == 0 || len(sums[0].Calls) != 1 || sums[0].Calls[0].Name != prompt.NotesTool {
		t.Fatalf("summaries: %+v", sums)
	}
	reqs := rec.take()
	saved := -1
	for i, b := range reqs {
		if strings.Contains(string(b), "filled your window") && strings.Contains(string(b), "save it to your notes") {
			saved = i
			break
		}
	}
	if saved < 0 || saved+2 >= len(reqs) {
		t.Fatalf("no notes asked for before the answer (%d requests)", len(reqs))
	}
	if strings.Contains(string(reqs[saved]), "Ada reads the big pages on Mondays.") {
		t.Errorf("the note was in the instructions before it was saved")
	}
	if after := string(reqs[saved+2]); !strings.Contains(after, "Ada reads the big pages on Mondays.") || strings.Contains(after, "filled your window") {
		t.Errorf("the request after the summary does not hold the note in its instructions:\n%.1500s", after)
	}
}
