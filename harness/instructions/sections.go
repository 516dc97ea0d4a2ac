package instructions

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

// Sections reads the prompt's sections, in settings.Sections' order: tools
// are what the tools the turn offers say of themselves, conn the
// connection the conversation started on. Nothing wrong with a section
// stops the turn: a file that is missing, over its most, not UTF-8, behind
// a symlink or outside the home leaves its section (or, for the
// repository's and the skills, the files and skills past the most) out,
// and the Log is told which and why.
func (r *Reader) Sections(s *settings.Settings, tools []prompt.ToolText, conn string) []prompt.Section {
	r.paths = r.Cache.paths.get(r.Agent.Dir, sameString, func(string) homePaths { return makeHomePaths(r.Agent) })
	out := make([]prompt.Section, 0, len(settings.Sections))
	for _, name := range settings.Sections {
		out = append(out, prompt.Section{Name: name, Text: r.section(s, name, s.Model.Name, tools, conn)})
	}
	return out
}

// SystemFor is the system prompt, and its stable part's length, for the
// model named: sections, a turn's, with that model's own instructions in
// the model section's place, the rest the same: a fallback model's.
func (r *Reader) SystemFor(s *settings.Settings, sections []prompt.Section, modelName string) (string, int) {
	out := slices.Clone(sections)
	for i := range out {
		if out[i].Name == "model" {
			out[i].Text = r.section(s, "model", modelName, nil, "")
		}
	}
	return r.Compose(out)
}

// Compose is prompt.Compose(sections), the string made for the last turn
// when its sections are the same.
func (r *Reader) Compose(sections []prompt.Section) (string, int) {
	out := r.Cache.system.get(sections, slices.Equal, func(in []prompt.Section) systemOut {
		system, stable := prompt.Compose(in)
		return systemOut{system, stable}
	})
	return out.system, out.stable
}

// section is one section's text: the spec's source for it (a file in the
// home, or none), else Link's own.
func (r *Reader) section(s *settings.Settings, name, modelName string, tools []prompt.ToolText, conn string) string {
	most := mostOf(s, name)
	switch src := s.Instructions[name].Source; {
	case src == "none":
		return ""
	case strings.Contains(src, "://"):
		r.leftOut(name, src, "a link is not read at a turn, which must not wait on another server nor change with it: save what it holds in the agent's home and name that file")
		return ""
	case src != "":
		if !filepath.IsAbs(src) {
			src = filepath.Join(r.Agent.Dir, src) // from the home, never the process's folder
		}
		return r.fileSection(name, src, most)
	}
	var text string
	switch name {
	case "base":
		text = prompt.Base
	case "model":
		path := r.Cache.modelPath.get([2]string{r.Agent.Dir, modelName}, sameKey, func(k [2]string) string {
			path, _ := r.Agent.Path(home.ModelInstruction, k[1])
			return path
		})
		if path == "" {
			return "" // a model name that is no folder has no file
		}
		return r.fileSection(name, path, most)
	case "tools":
		text = r.Cache.tools.get(slices.Clip(tools), slices.Equal, prompt.Tools)
	case "environment":
		text = prompt.Environment(r.paths.files, conn)
	case "repository":
		return r.repository(most)
	case "skills":
		return r.skills(most)
	case "persona", "owner", "instruction", "notes":
		path := r.paths.notes
		switch name {
		case "persona":
			path = r.paths.persona
		case "owner":
			path = r.paths.owner
		case "instruction":
			path = r.paths.instruction
		}
		text := r.fileSection(name, path, most)
		if name == "notes" {
			if text = r.Cache.notes.get(text, sameString, prompt.Notes); len(text) > most {
				r.leftOut(name, path, "with its heading, over the section's most: raise [instructions] notes most")
				return ""
			}
		}
		return text
	case "now":
		text = prompt.Now
	}
	if len(text) > most {
		r.leftOut(name, "", "over the section's most: raise its most in [instructions]")
		return ""
	}
	return text
}

// fileSection is a file's text as a section: a missing file is an empty
// section; one that cannot be taken is left out, and the log says why.
func (r *Reader) fileSection(name, path string, most int) string {
	e, fresh, err := r.readFile(path, most, nil)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case errors.Is(err, errTooLarge):
		r.leftOut(name, path, err.Error()+": shorten it, or raise [instructions] "+name+" most")
		return ""
	case errors.Is(err, home.ErrBadName):
		r.leftOut(name, path, err.Error()+": files are read beneath the agent's home, never through a symlink")
		return ""
	case err != nil:
		r.leftOut(name, path, err.Error())
		return ""
	case e.err != nil:
		if fresh {
			r.leftOut(name, path, e.err.Error())
		}
		return ""
	}
	return e.text
}

// leftOut tells the Log what the prompt left out, and why.
func (r *Reader) leftOut(section, file, why string) {
	if r.Log != nil {
		r.Log.LeftOut(section, file, why)
	}
}

// repository is the repository's section: AGENTS.md, else CLAUDE.md, of
// the files folder and of each of its folders (by name, dot folders
// skipped, at most maxRepoFolders), whole files until the section's most.
func (r *Reader) repository(most int) string {
	files := r.paths.files
	dir, err := r.list(files)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.leftOut("repository", files, err.Error())
		}
		return ""
	}
	var found []prompt.RepoFile
	if f, ok := r.repoFile(dir, "", most); ok {
		found = append(found, f)
	}
	n := 0
	for i, name := range dir.names {
		sub, ok := strings.CutSuffix(name, "/")
		if !ok || strings.HasPrefix(sub, ".") {
			continue
		}
		if n++; n > maxRepoFolders {
			r.leftOut("repository", files, "more than 64 folders: the instructions of those after "+found[len(found)-1].Path+" are not read")
			break
		}
		if f, ok := r.repoKept(dir.paths[i], name, most); ok {
			found = append(found, f)
			continue
		}
		subDir, err := r.list(dir.paths[i])
		if err != nil {
			continue
		}
		if f, ok := r.repoFile(subDir, name, most); ok {
			found = append(found, f)
		}
	}
	out := r.Cache.repo.get(repoIn{found, most}, sameRepo, func(in repoIn) sectionOut {
		text, left := prompt.Repository(in.files, in.most)
		return sectionOut{text: text, left: left}
	})
	if len(out.left) > 0 {
		r.leftOut("repository", strings.Join(out.left, ", "), "past the section's most: raise [instructions] repository most")
	}
	return out.text
}

// repoFile is a folder's instructions: the first of prompt.RepoNames it
// holds as a file. prefix is the folder's path in the files folder.
func (r *Reader) repoFile(dir *cached, prefix string, most int) (prompt.RepoFile, bool) {
	for _, n := range prompt.RepoNames {
		if path, ok := dir.child(n + "@"); ok {
			r.leftOut("repository", path, "a symlink, never followed: make it a file")
			continue
		}
		path, ok := dir.child(n)
		if !ok {
			continue
		}
		if text := r.fileSection("repository", path, most); text != "" {
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
func (r *Reader) repoKept(path, prefix string, most int) (prompt.RepoFile, bool) {
	dir := r.Cache.peek(path)
	if dir == nil {
		return prompt.RepoFile{}, false
	}
	name := prompt.RepoNames[0]
	file, ok := dir.child(name)
	if !ok {
		return prompt.RepoFile{}, false
	}
	e, err := r.unchanged(file)
	if err != nil || e == nil || e.err != nil || e.text == "" || len(e.text) > most {
		return prompt.RepoFile{}, false
	}
	return prompt.RepoFile{Path: prefix + name, Text: e.text}, true
}

// skills is the skills' section: each skill's name and description from
// its SKILL.md, parsed once per version of the file.
func (r *Reader) skills(most int) string {
	path := r.paths.skills
	dir, err := r.list(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.leftOut("skills", path, err.Error())
		}
		return ""
	}
	files := r.Cache.skillPaths.get(dir, sameEntry, func(dir *cached) []string {
		files := make([]string, len(dir.names))
		for i, n := range dir.names {
			if name, ok := strings.CutSuffix(n, "/"); ok {
				files[i], _ = r.Agent.Path(home.Skill, name)
			}
		}
		return files
	})
	var list []prompt.Skill
	for i, n := range dir.names {
		name, ok := strings.CutSuffix(n, "/")
		if !ok {
			if strings.HasSuffix(n, "@") {
				r.leftOut("skills", dir.paths[i], "a symlink, never followed: make it a folder")
			}
			continue
		}
		file := files[i]
		if file == "" {
			_, err := r.Agent.Path(home.Skill, name)
			r.leftOut("skills", dir.paths[i], err.Error())
			continue
		}
		e, fresh, err := r.readFile(file, maxSkillRead, func(b []byte) *cached {
			s, err := prompt.ParseSkill(name, b)
			return &cached{skill: s, err: err}
		})
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			r.leftOut("skills", file, err.Error())
			continue
		case e.err != nil:
			if fresh {
				r.leftOut("skills", file, e.err.Error())
			}
			continue
		}
		if len(list) == maxSkills {
			r.leftOut("skills", path, "more than 256 skills: those after "+list[len(list)-1].Name+" are not listed")
			break
		}
		list = append(list, e.skill)
	}
	out := r.Cache.skills.get(skillsIn{list, most}, sameSkills, func(in skillsIn) sectionOut {
		text, left := prompt.Skills(in.skills, in.most)
		return sectionOut{text: text, nleft: left}
	})
	if out.nleft > 0 {
		r.leftOut("skills", path, "the last skills by name, whole, past the section's most: raise [instructions] skills most")
	}
	return out.text
}
