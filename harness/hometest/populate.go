package hometest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/settings"
)

// lines makes n lines of words, to give a section a realistic size.
func lines(what string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- %s %d: keep it the way the owner asked, and say so when it cannot be done.\n", what, i)
	}
	return b.String()
}

// Populate gives the agent's home at dir something for every section of
// its prompt, and a config.json naming modelName: a fully populated agent.
func Populate(t testing.TB, dir, modelName string) {
	t.Helper()
	w := func(rel, text string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w("instructions/persona.md", "# Who you are\n\nYou are Link, Ada's assistant: calm, exact, brief.\n"+lines("Habit", 12))
	w("instructions/owner.md", "# Who your owner is\n\nAda Lovelace, a mathematician in London, writes in English and French.\n"+lines("Preference", 8))
	w("instructions/instruction.md", "# Standing instructions\n\n"+lines("Rule", 10))
	w("instructions/models/anthropic/claude-opus-5-5/instruction.md", "Opus: think before calling a tool; keep answers short.\n")
	w("instructions/models/anthropic/claude-sonnet-5/instruction.md", "Sonnet: answer at once when no tool is needed.\n")
	w("instructions/models/openai/gpt-6-luna/instruction.md", "Luna: use the tools' own words for their results.\n")
	w("memory/notes.md", "- Ada's daughter is called Byron.\n- The standup is at nine.\n")
	w("skills/pdf/SKILL.md", "---\nname: pdf\ndescription: >\n  Fill and read PDF forms.\nlicense: MIT\n---\n# PDF\n\nThe instructions.\n")
	w("skills/csv/SKILL.md", "---\nname: csv\ndescription: \"Read, sort and sum CSV files.\"\n---\n# CSV\n")
	w("files/AGENTS.md", "# The workspace\n\n"+lines("Convention", 6))
	w("files/engine/AGENTS.md", "# The engine\n\nRun go test ./... before a commit.\n")
	w("files/engine/CLAUDE.md", "See AGENTS.md.\n") // read once, as AGENTS.md
	w("files/notes/CLAUDE.md", "# Notes\n\nOne file a day, named by its date.\n")
	w("files/todo.txt", "not a folder\n")
	s := settings.Defaults()
	s.Model.Name = modelName
	if err := settings.Write(filepath.Join(dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
}
