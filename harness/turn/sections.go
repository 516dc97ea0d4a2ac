package turn

import (
	"errors"
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
	t.paths = t.c.prompts.paths.get(t.r.Agent.Dir, sameString, func(string) homePaths { return makeHomePaths(t.r.Agent) })
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
	return t.compose(out)
}

// compose is prompt.Compose(sections), the string made for the last turn
// when its sections are the same.
func (t *turn) compose(sections []prompt.Section) (string, int) {
	out := t.c.prompts.system.get(sections, slices.Equal, func(in []prompt.Section) systemOut {
		system, stable := prompt.Compose(in)
		return systemOut{system, stable}
	})
	return out.system, out.stable
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
		if !filepath.IsAbs(src) {
			src = filepath.Join(t.r.Agent.Dir, src) // from the home, never the process's folder
		}
		return t.fileSection(name, src, most)
	}
	var text string
	switch name {
	case "base":
		text = prompt.Base
	case "model":
		path := t.c.prompts.modelPath.get([2]string{t.r.Agent.Dir, modelName}, sameKey, func(k [2]string) string {
			path, _ := t.r.Agent.Path(home.ModelInstruction, k[1])
			return path
		})
		if path == "" {
			return "" // a model name that is no folder has no file
		}
		return t.fileSection(name, path, most)
	case "tools":
		text = t.c.prompts.tools.get(slices.Clip(t.tools), slices.Equal, prompt.Tools)
	case "environment":
		text = prompt.Environment(t.paths.files, t.startConnection(m))
	case "repository":
		return t.repository(most)
	case "skills":
		return t.skills(most)
	case "persona", "owner", "instruction", "notes":
		path := t.paths.notes
		switch name {
		case "persona":
			path = t.paths.persona
		case "owner":
			path = t.paths.owner
		case "instruction":
			path = t.paths.instruction
		}
		text := t.fileSection(name, path, most)
		if name == "notes" {
			if text = t.c.prompts.notes.get(text, sameString, prompt.Notes); len(text) > most {
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
	t.log().Warn("instruction left out", "section", section, "file", file, "why", why)
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
	files := t.paths.files
	dir, err := t.list(files)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.leftOut("repository", files, err.Error())
		}
		return ""
	}
	var found []prompt.RepoFile
	if f, ok := t.repoFile(dir, "", most); ok {
		found = append(found, f)
	}
	n := 0
	for i, name := range dir.names {
		sub, ok := strings.CutSuffix(name, "/")
		if !ok || strings.HasPrefix(sub, ".") {
			continue
		}
		if n++; n > maxRepoFolders {
			t.leftOut("repository", files, "more than 64 folders: the instructions of those after "+found[len(found)-1].Path+" are not read")
			break
		}
		if f, ok := t.repoKept(dir.paths[i], name, most); ok {
			found = append(found, f)
			continue
		}
		subDir, err := t.list(dir.paths[i])
		if err != nil {
			continue
		}
		if f, ok := t.repoFile(subDir, name, most); ok {
			found = append(found, f)
		}
	}
	out := t.c.prompts.repo.get(repoIn{found, most}, sameRepo, func(in repoIn) sectionOut {
		text, left := prompt.Repository(in.files, in.most)
		return sectionOut{text: text, left: left}
	})
	if len(out.left) > 0 {
		t.leftOut("repository", strings.Join(out.left, ", "), "past the section's most: raise [instructions] repository most")
	}
	return out.text
}

// repoFile is a folder's instructions: the first of prompt.RepoNames it
// holds as a file. prefix is the folder's path in the files folder.
func (t *turn) repoFile(dir *cached, prefix string, most int) (prompt.RepoFile, bool) {
	for _, n := range prompt.RepoNames {
		if path, ok := dir.child(n + "@"); ok {
			t.leftOut("repository", path, "a symlink, never followed: make it a file")
			continue
		}
		path, ok := dir.child(n)
		if !ok {
			continue
		}
		if text := t.fileSection("repository", path, most); text != "" {
			return prompt.RepoFile{Path: prefix + n, Text: text}, true
		}
	}
	return prompt.RepoFile{}, false
}

// repoKept is the AGENTS.md of the folder at path when the folder held
// one at the last turn and it is still there unchanged: the first of
// prompt.RepoNames wins whatever else the folder holds now, so finding it
// takes one lstat and no look at the folder. Anything else is not ok, and
// the folder is read as repoFile reads it.
func (t *turn) repoKept(path, prefix string, most int) (prompt.RepoFile, bool) {
	dir := t.c.prompts.peek(path)
	if dir == nil {
		return prompt.RepoFile{}, false
	}
	name := prompt.RepoNames[0]
	file, ok := dir.child(name)
	if !ok {
		return prompt.RepoFile{}, false
	}
	e, err := t.unchanged(file)
	if err != nil || e == nil || e.err != nil || e.text == "" || len(e.text) > most {
		return prompt.RepoFile{}, false
	}
	return prompt.RepoFile{Path: prefix + name, Text: e.text}, true
}

// skills is the skills' section: each skill's name and description from
// its SKILL.md, parsed once per version of the file.
func (t *turn) skills(most int) string {
	path := t.paths.skills
	dir, err := t.list(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.leftOut("skills", path, err.Error())
		}
		return ""
	}
	files := t.c.prompts.skillPaths.get(dir, sameEntry, func(dir *cached) []string {
		files := make([]string, len(dir.names))
		for i, n := range dir.names {
			if name, ok := strings.CutSuffix(n, "/"); ok {
				files[i], _ = t.r.Agent.Path(home.Skill, name)
			}
		}
		return files
	})
	var list []prompt.Skill
	for i, n := range dir.names {
		name, ok := strings.CutSuffix(n, "/")
		if !ok {
			if strings.HasSuffix(n, "@") {
				t.leftOut("skills", dir.paths[i], "a symlink, never followed: make it a folder")
			}
			continue
		}
		file := files[i]
		if file == "" {
			_, err := t.r.Agent.Path(home.Skill, name)
			t.leftOut("skills", dir.paths[i], err.Error())
			continue
		}
		e, fresh, err := t.readFile(file, maxSkillRead, func(b []byte) *cached {
			s, err := prompt.ParseSkill(name, b)
			return &cached{skill: s, err: err}
		})
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			t.leftOut("skills", file, err.Error())
			continue
		case e.err != nil:
			if fresh {
				t.leftOut("skills", file, e.err.Error())
			}
			continue
		}
		if len(list) == maxSkills {
			t.leftOut("skills", path, "more than 256 skills: those after "+list[len(list)-1].Name+" are not listed")
			break
		}
		list = append(list, e.skill)
	}
	out := t.c.prompts.skills.get(skillsIn{list, most}, sameSkills, func(in skillsIn) sectionOut {
		text, left := prompt.Skills(in.skills, in.most)
		return sectionOut{text: text, nleft: left}
	})
	if out.nleft > 0 {
		t.leftOut("skills", path, "the last skills by name, whole, past the section's most: raise [instructions] skills most")
	}
	return out.text
}
