package prompt

import (
	"errors"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/internal/golden"
)

func TestCompose(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sections []Section
		system   string
		stable   string // the system's stable part
	}{
		{"all", []Section{{"base", "Base.\n"}, {"model", ""}, {"owner", "\nOwner."}, {"instruction", "Do."}, {"notes", "# Your notes\n\n- a"}},
			"Base.\n\nOwner.\n\nDo.\n\n# Your notes\n\n- a", "Base.\n\nOwner."},
		{"nothing stable", []Section{{"base", " \n"}, {"instruction", "Do."}}, "Do.", ""},
		{"all stable", []Section{{"base", "Base."}, {"skills", "Skills."}}, "Base.\n\nSkills.", "Base.\n\nSkills."},
		{"a stable one after a changing one is not in the stable part", []Section{{"base", "Base."}, {"notes", "N."}, {"owner", "O."}}, "Base.\n\nN.\n\nO.", "Base."},
		{"empty", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			system, stable := Compose(tc.sections)
			if system != tc.system || system[:stable] != tc.stable {
				t.Errorf("Compose = %q, stable %q; want %q, %q", system, system[:stable], tc.system, tc.stable)
			}
			if s := System(tc.sections); s != system {
				t.Errorf("System = %q, Compose %q", s, system)
			}
		})
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  bool
	}{
		{"plain", "plain", false},
		{"\xef\xbb\xbfwith a mark", "with a mark", false},
		{"ünïcode ✓", "ünïcode ✓", false},
		{"caf\xe9 latin-1", "", true},
		{"\xff\xfeu\x00t\x00f\x00-16", "", true},
	} {
		got, err := Text([]byte(tc.in))
		if got != tc.want || (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrNotUTF8)) {
			t.Errorf("Text(%q) = %q, %v", tc.in, got, err)
		}
	}
	if _, err := Text([]byte("caf\xe9")); err == nil || !strings.Contains(err.Error(), "offset 3") {
		t.Errorf("the error does not say where: %v", err)
	}
}

func TestNotes(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "",
		"\n  \n":                      "",
		"- a\n- b\n":                  "# Your notes\n\n- a\n- b",
		"# Your notes\n\n- a\n":       "# Your notes\n\n- a",
		"# Your notes plus more\n- a": "# Your notes\n\n# Your notes plus more\n- a",
	} {
		if got := Notes(in); got != want {
			t.Errorf("Notes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTools(t *testing.T) {
	long := strings.Repeat("a line of words\n", 200) // 3200 bytes
	noLines := strings.Repeat("é", 1500)             // 3000 bytes, no line end
	got := Tools([]ToolText{
		{Tool: "scheduler", Text: "Schedule with schedule__at.\n"},
		{Tool: "memory", Text: "remember writes a note."},
		{Tool: "quiet", Text: "  \n"},
		{Tool: "long", Text: long},
		{Tool: "wide", Text: noLines},
	})
	golden.Check(t, "tools.golden", []byte(got), *update)
	for _, part := range strings.Split(got, "\n\n## ")[1:] {
		_, text, _ := strings.Cut(part, "\n\n")
		if len(text) > MaxToolText {
			t.Errorf("a tool's text of %d bytes", len(text))
		}
	}
	if strings.Contains(got, "quiet") || !strings.Contains(got, "## long") || strings.Index(got, "## memory") > strings.Index(got, "## scheduler") {
		t.Errorf("tools not listed, sorted, without the wordless:\n%s", got)
	}
	if Tools(nil) != "" || Tools([]ToolText{{Tool: "x"}}) != "" {
		t.Error("no words, yet a section")
	}
}

func TestRepository(t *testing.T) {
	files := []RepoFile{{"AGENTS.md", "Root.\n"}, {"app/CLAUDE.md", "App."}, {"lib/AGENTS.md", "Lib."}}
	full, left := Repository(files, 1<<10)
	if want := "# The repository's instructions\n\n## AGENTS.md\n\nRoot.\n\n## app/CLAUDE.md\n\nApp.\n\n## lib/AGENTS.md\n\nLib."; full != want || left != nil {
		t.Fatalf("Repository = %q, %q", full, left)
	}
	cut, left := Repository(files, len(full)-1)
	if !strings.HasSuffix(cut, "App.") || len(left) != 1 || left[0] != "lib/AGENTS.md" {
		t.Errorf("past the most: %q, left %q", cut, left)
	}
	if s, left := Repository(files, 10); s != "" || len(left) != 3 {
		t.Errorf("nothing fits: %q, left %q", s, left)
	}
}

func TestSkills(t *testing.T) {
	skills := []Skill{{"pdf", "Fill PDF forms."}, {"csv", "Read\n  CSV files."}, {"zip", "Pack files."}}
	full, left := Skills(skills, 1<<10)
	golden.Check(t, "skills.golden", []byte(full), *update)
	if left != 0 || strings.Index(full, "csv") > strings.Index(full, "pdf") || !strings.Contains(full, "- csv: Read CSV files.") {
		t.Fatalf("Skills = %q, left %d", full, left)
	}
	cut, left := Skills(skills, len(full)-1)
	if left != 1 || strings.Contains(cut, "zip") || !strings.HasSuffix(cut, "- pdf: Fill PDF forms.") {
		t.Errorf("past the most, a whole skill is left out: %q, left %d", cut, left)
	}
	if skills[0].Name != "pdf" {
		t.Error("Skills sorted its caller's slice")
	}
}

func TestCacheKey(t *testing.T) {
	a, b := CacheKey("ada", "telegram:42"), CacheKey("ada", "telegram:43")
	if a != CacheKey("ada", "telegram:42") || a == b || a == CacheKey("ad", "atelegram:42") {
		t.Errorf("keys %q %q", a, b)
	}
	if len(a) != 36 || strings.Contains(a, "ada") {
		t.Errorf("key %q", a)
	}
}

func TestParseSkill(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      Skill
		err       string // in the error; empty: no error
	}{
		{"plain", "---\nname: pdf\ndescription: Fill PDF forms. # a comment\nlicense: MIT\n---\n# PDF\n", Skill{"pdf", "Fill PDF forms."}, ""},
		{"quoted", "---\nname: \"pdf\"\ndescription: 'It''s for PDFs: forms, too.'\n---\n", Skill{"pdf", "It's for PDFs: forms, too."}, ""},
		{"double quoted escapes", "---\nname: pdf\ndescription: \"Tab\\tand \\\"quotes\\\"\"\n---\n", Skill{"pdf", "Tab and \"quotes\""}, ""},
		{"folded", "---\nname: pdf\ndescription: >\n  Fill PDF forms,\n  and read them.\nmetadata:\n  author: ada\n---\n", Skill{"pdf", "Fill PDF forms, and read them."}, ""},
		{"literal", "---\r\nname: pdf\r\ndescription: |\r\n  One.\r\n  Two.\r\n---\r\n", Skill{"pdf", "One. Two."}, ""},
		{"plain over lines", "---\nname: pdf\ndescription: Fill PDF\n  forms.\n---\n", Skill{"pdf", "Fill PDF forms."}, ""},
		{"nested keys passed over", "---\nallowed-tools:\n  - read\n  - write\nname: pdf\ndescription: D.\n---\n", Skill{"pdf", "D."}, ""},
		{"no front matter", "# PDF\n", Skill{}, "does not start"},
		{"not closed", "---\nname: pdf\ndescription: D.\n", Skill{}, "no closing"},
		{"no name", "---\ndescription: D.\n---\n", Skill{}, "no name"},
		{"no description", "---\nname: pdf\n---\n", Skill{}, "no description"},
		{"empty description", "---\nname: pdf\ndescription: \"\"\n---\n", Skill{}, "no description"},
		{"another folder's name", "---\nname: zip\ndescription: D.\n---\n", Skill{}, "not its folder's name"},
		{"a bad name", "---\nname: PDF\ndescription: D.\n---\n", Skill{}, "lowercase"},
		{"twice", "---\nname: pdf\nname: pdf\ndescription: D.\n---\n", Skill{}, "twice"},
		{"a list", "---\nname: pdf\ndescription:\n  - a\n---\n", Skill{}, "a list"},
		{"a flow map", "---\nname: pdf\ndescription: {a: b}\n---\n", Skill{}, "a list or map"},
		{"not a key", "---\nname: pdf\njust words\n---\n", Skill{}, "not \"key: value\""},
		{"unclosed quote", "---\nname: pdf\ndescription: \"open\n---\n", Skill{}, "double-quoted"},
		{"not UTF-8", "---\nname: pdf\ndescription: caf\xe9\n---\n", Skill{}, "UTF-8"},
		{"too long", "---\nname: pdf\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", Skill{}, "over 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSkill("pdf", []byte(tc.src))
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Errorf("ParseSkill = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrFrontMatter) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSkill = %+v, %v; want an error saying %q", got, err, tc.err)
			}
		})
	}
}

func FuzzParseSkill(f *testing.F) {
	f.Add([]byte("---\nname: pdf\ndescription: >\n  Fill.\n---\n"))
	f.Add([]byte("---\nname: 'pdf'\ndescription: \"a\\tb\"\n---\n"))
	f.Add([]byte("---\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := ParseSkill("pdf", src)
		if err != nil {
			return
		}
		if s.Name != "pdf" || s.Description == "" || strings.ContainsAny(s.Description, "\n\t") {
			t.Errorf("ParseSkill(%q) = %+v", src, s)
		}
	})
}
