package turn

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
)

// defaultMost is a section's most in bytes when the spec sets none;
// mostOf names the sections with another.
const defaultMost = 64 << 10

func mostOf(s *settings.Settings, name string) int {
	if sec, ok := s.Instructions[name]; ok && sec.Most > 0 {
		return sec.Most
	}
	switch name {
	case "skills", "notes":
		return 16 << 10
	case "environment", "now":
		return 4 << 10
	}
	return defaultMost
}

// Limits of what the prompt reads from folders.
const (
	maxRepoFolders = 64       // folders of the files folder whose AGENTS.md or CLAUDE.md is read
	maxSkills      = 256      // skills listed at most
	maxSkillRead   = 16 << 10 // bytes of a SKILL.md read for its front matter
)

// skillMeta is a skill's entry in the prompt cache.
type skillMeta = prompt.Skill

// sections reads the prompt's sections, in settings.Sections' order, for
// message m. Nothing wrong with a section stops the turn: a file that is
// missing, over its most, not UTF-8, behind a symlink or outside the home
// leaves its section (or, for the repository's and the skills, the files
// and skills past the most) out, and the log says which and why.
func (t *turn) sections(s *settings.Settings, m *Message) []prompt.Section {
	out := make([]prompt.Section, 0, len(settings.Sections))
	for _, name := range settings.Sections {
		out = append(out, prompt.Section{Name: name, Text: t.section(s, name, s.Model.Name, m)})
	}
	return out
}

// systemFor is the system prompt, and its stable part's length, for the
// model named: this turn's sections with that model's own instructions in
// the model section's place, the rest the same. The models work calls it
// for a fallback model.
func (t *turn) systemFor(s *settings.Settings, sections []prompt.Section, modelName string) (string, int) {
	out := slices.Clone(sections)
	for i := range out {
		if out[i].Name == "model" {
			out[i].Text = t.section(s, "model", modelName, nil)
		}
	}
	return prompt.Compose(out)
}

// section is one section's text: the spec's source for it (a file in the
// home, or none), else Link's own.
func (t *turn) section(s *settings.Settings, name, modelName string, m *Message) string {
	most := mostOf(s, name)
	switch src := s.Instructions[name].Source; {
	case src == "none":
		return ""
	case strings.Contains(src, "://"):
		t.leftOut(name, src, "a link is not read at a turn, which must not wait on another server nor change with it: save what it holds in the agent's home and name that file")
		return ""
	case src != "":
		return t.fileSection(name, src, most)
	}
	var text string
	switch name {
	case "base":
		text = prompt.Base
	case "model":
		path, err := t.r.Agent.Path(home.ModelInstruction, modelName)
		if err != nil {
			return "" // a model name that is no folder has no file
		}
		return t.fileSection(name, path, most)
	case "tools":
		text = prompt.Tools(t.tools)
	case "environment":
		files, _ := t.r.Agent.Path(home.Files, "")
		text = prompt.Environment(files, t.startConnection(m))
	case "repository":
		return t.repository(most)
	case "skills":
		return t.skills(most)
	case "persona", "owner", "instruction", "notes":
		place := home.Notes
		switch name {
		case "persona":
			place = home.Persona
		case "owner":
			place = home.Owner
		case "instruction":
			place = home.Instruction
		}
		path, _ := t.r.Agent.Path(place, "")
		text := t.fileSection(name, path, most)
		if name == "notes" {
			if text = prompt.Notes(text); len(text) > most {
				t.leftOut(name, path, "with its heading, over the section's most: raise [instructions] notes most")
				return ""
			}
		}
		return text
	case "now":
		text = prompt.Now
	}
	if len(text) > most {
		t.leftOut(name, "", "over the section's most: raise its most in [instructions]")
		return ""
	}
	return text
}

// fileSection is a file's text as a section: a missing file is an empty
// section; one that cannot be taken is left out, and the log says why.
func (t *turn) fileSection(name, path string, most int) string {
	e, fresh, err := t.readFile(path, most, nil)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case errors.Is(err, errTooLarge):
		t.leftOut(name, path, err.Error()+": shorten it, or raise [instructions] "+name+" most")
		return ""
	case errors.Is(err, home.ErrBadName):
		t.leftOut(name, path, err.Error()+": files are read beneath the agent's home, never through a symlink")
		return ""
	case err != nil:
		t.leftOut(name, path, err.Error())
		return ""
	case e.err != nil:
		if fresh {
			t.leftOut(name, path, e.err.Error())
		}
		return ""
	}
	return e.text
}

// leftOut says in the log what the prompt left out, and why.
func (t *turn) leftOut(section, file, why string) {
	slog.Warn("prompt: left out", "agent", t.r.Agent.Name, "thread", t.thread, "section", section, "file", file, "why", why)
}

// startConnection is the connection the conversation started on: that of
// its first message, this one when it is the first.
func (t *turn) startConnection(m *Message) string {
	if t.last == 1 && m != nil {
		return m.Connection
	}
	return t.startConn
}

// repository is the repository's section: AGENTS.md, else CLAUDE.md, of
// the files folder and of each of its folders (by name, dot folders
// skipped, at most maxRepoFolders), whole files until the section's most.
func (t *turn) repository(most int) string {
	files, _ := t.r.Agent.Path(home.Files, "")
	names, err := t.list(files)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.leftOut("repository", files, err.Error())
		}
		return ""
	}
	var found []prompt.RepoFile
	if f, ok := t.repoFile(files, "", names, most); ok {
		found = append(found, f)
	}
	n := 0
	for _, name := range names {
		dir, ok := strings.CutSuffix(name, "/")
		if !ok || strings.HasPrefix(dir, ".") {
			continue
		}
		if n++; n > maxRepoFolders {
			t.leftOut("repository", files, "more than 64 folders: the instructions of those after "+found[len(found)-1].Path+" are not read")
			break
		}
		sub := filepath.Join(files, dir)
		subNames, err := t.list(sub)
		if err != nil {
			continue
		}
		if f, ok := t.repoFile(sub, dir+"/", subNames, most); ok {
			found = append(found, f)
		}
	}
	text, left := prompt.Repository(found, most)
	if len(left) > 0 {
		t.leftOut("repository", strings.Join(left, ", "), "past the section's most: raise [instructions] repository most")
	}
	return text
}

// repoFile is a folder's instructions: the first of prompt.RepoNames it
// holds as a file.
func (t *turn) repoFile(dir, prefix string, names []string, most int) (prompt.RepoFile, bool) {
	for _, n := range prompt.RepoNames {
		if slices.Contains(names, n+"@") {
			t.leftOut("repository", filepath.Join(dir, n), "a symlink, never followed: make it a file")
			continue
		}
		if !slices.Contains(names, n) {
			continue
		}
		if text := t.fileSection("repository", filepath.Join(dir, n), most); text != "" {
			return prompt.RepoFile{Path: prefix + n, Text: text}, true
		}
	}
	return prompt.RepoFile{}, false
}

// skills is the skills' section: each skill's name and description from
// its SKILL.md, parsed once per version of the file.
func (t *turn) skills(most int) string {
	dir, _ := t.r.Agent.Path(home.Skills, "")
	names, err := t.list(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.leftOut("skills", dir, err.Error())
		}
		return ""
	}
	var list []prompt.Skill
	for _, n := range names {
		name, ok := strings.CutSuffix(n, "/")
		if !ok {
			if strings.HasSuffix(n, "@") {
				t.leftOut("skills", filepath.Join(dir, strings.TrimSuffix(n, "@")), "a symlink, never followed: make it a folder")
			}
			continue
		}
		path, err := t.r.Agent.Path(home.Skill, name)
		if err != nil {
			t.leftOut("skills", filepath.Join(dir, name), err.Error())
			continue
		}
		e, fresh, err := t.readFile(path, maxSkillRead, func(b []byte) *cached {
			s, err := prompt.ParseSkill(name, b)
			return &cached{skill: s, err: err}
		})
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			t.leftOut("skills", path, err.Error())
			continue
		case e.err != nil:
			if fresh {
				t.leftOut("skills", path, e.err.Error())
			}
			continue
		}
		if len(list) == maxSkills {
			t.leftOut("skills", dir, "more than 256 skills: those after "+list[len(list)-1].Name+" are not listed")
			break
		}
		list = append(list, e.skill)
	}
	text, left := prompt.Skills(list, most)
	if left > 0 {
		t.leftOut("skills", dir, "the last skills by name, whole, past the section's most: raise [instructions] skills most")
	}
	return text
}
