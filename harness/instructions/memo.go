package instructions

import (
	"slices"
	"sync"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/prompt"
)

// memo keeps the last value a pure function made, with what it was made
// from, so a turn whose inputs are those of the last is given the same
// value and builds nothing: with nothing changed, a turn's sections are the
// strings the last turn composed, and comparing them costs a pointer
// compare each. It holds one value, never more. The zero value is empty and
// ready; it is safe for concurrent use.
type memo[In, Out any] struct {
	mu  sync.Mutex // guards the fields below
	ok  bool
	in  In
	out Out
}

// get returns build(in), or the value made before from what same finds
// equal to in. build must not keep in, and in must not change after: the
// memo keeps it to compare with the next.
func (m *memo[In, Out]) get(in In, same func(a, b In) bool, build func(In) Out) Out {
	m.mu.Lock()
	if m.ok && same(m.in, in) {
		out := m.out
		m.mu.Unlock()
		return out
	}
	m.mu.Unlock()
	out := build(in)
	m.mu.Lock()
	m.ok, m.in, m.out = true, in, out
	m.mu.Unlock()
	return out
}

// memos are the prompt's texts made from what the turn read, each the last
// made; they hold one prompt's worth of text, a part of what the files'
// entries already hold, and a new process makes them again.
type memos struct {
	paths      memo[string, homePaths] // by the home's folder
	modelPath  memo[[2]string, string] // by the home's folder and the model's name
	skillPaths memo[*cached, []string] // by the skills folder's entry: each SKILL.md's path, "" for none
	tools      memo[[]prompt.ToolText, string]
	notes      memo[string, string]
	repo       memo[repoIn, sectionOut]
	skills     memo[skillsIn, sectionOut]
	system     memo[[]prompt.Section, systemOut]
}

type repoIn struct {
	files []prompt.RepoFile
	most  int
}

type skillsIn struct {
	skills []prompt.Skill
	most   int
}

// sectionOut is a section's text and what was left out of it: the paths
// of the files, or the number of skills.
type sectionOut struct {
	text  string
	left  []string
	nleft int
}

type systemOut struct {
	system string
	stable int
}

func sameRepo(a, b repoIn) bool     { return a.most == b.most && slices.Equal(a.files, b.files) }
func sameSkills(a, b skillsIn) bool { return a.most == b.most && slices.Equal(a.skills, b.skills) }
func sameString(a, b string) bool   { return a == b }
func sameKey(a, b [2]string) bool   { return a == b }
func sameEntry(a, b *cached) bool   { return a == b }

// homePaths are the paths of the files and folders the prompt reads at each
// turn, made once from the agent's home.
type homePaths struct {
	persona, owner, instruction, notes, files, skills string
}

func makeHomePaths(a home.Agent) homePaths {
	p := func(place home.Place) string {
		path, _ := a.Path(place, "") // fails only for an agent with no home, whose turn has failed before
		return path
	}
	return homePaths{
		persona: p(home.Persona), owner: p(home.Owner), instruction: p(home.Instruction),
		notes: p(home.Notes), files: p(home.Files), skills: p(home.Skills),
	}
}
