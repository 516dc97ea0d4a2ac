package home

import (
	"fmt"
	"path/filepath"
	"strings"

	"lnk.dev/linkharness/store"
)

// ErrBadName comes when a name from outside cannot become a path: a thread,
// model, place or file name, or a path outside the home. It is a
// store.ErrBadName too, so errors.Is(err, store.ErrBadName) holds for it,
// and a caller answers a bad name the same whoever refused it.
var ErrBadName error = &kindError{"home: bad name", store.ErrBadName}

// kindError is a sentinel of this package that is also one of store's:
// the kinds of error every part of Link Harness shares (bad names, limits)
// are store's, at the bottom of the tree, and home's own wrap them.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// MaxThreadBytes is the longest thread name taken.
const MaxThreadBytes = 200

// Agent is an agent and its home folder. The zero value names nothing; an
// Agent is a value, safe to copy and to use from any goroutine.
type Agent struct {
	Name string // the agent's name, as requests name it
	Dir  string // its home folder, absolute or relative to the working folder
}

// Place is one kind of path in an agent's home.
type Place int

// The places of an agent's home. Those marked "of name" take a name: a
// thread, a model (maker/model), or a skill.
const (
	Config           Place = iota // config.json
	ToolLists                     // tool-lists.json
	Persona                       // instructions/persona.md
	Owner                         // instructions/owner.md
	Instruction                   // instructions/instruction.md
	ModelInstruction              // instructions/models/<maker>/<model>/instruction.md, of name
	Notes                         // memory/notes.md
	Skills                        // skills/
	Skill                         // skills/<name>/SKILL.md, of name
	Files                         // files/
	Chats                         // chats/
	Chat                          // chats/<dir>/, of name
	ChatEvents                    // chats/<dir>/events.jsonl, of name
	ChatFrames                    // chats/<dir>/events.zst, of name
	ChatCopy                      // chats/<dir>/chat.md, of name
	ChatTools                     // chats/<dir>/tools.json, of name
	ChatEnd                       // chats/<dir>/end, of name
	ChatPending                   // chats/<dir>/pending/, of name
	SQLite                        // chats/events.sqlite
	Harness                       // harness.json, the harness lnk agent use chose
)

// Path returns the path of place p in the agent's home; name is the thread,
// model or skill the place is of, and must be empty otherwise. It is the one
// function that turns names into paths.
func (a Agent) Path(p Place, name string) (string, error) {
	if a.Dir == "" {
		return "", fmt.Errorf("%w: agent %q has no home", ErrBadName, a.Name)
	}
	j := func(parts ...string) (string, error) { return join(a.Dir, parts), nil }
	switch p {
	case ModelInstruction:
		maker, model, err := ModelParts(name)
		if err != nil {
			return "", err
		}
		return j("instructions", "models", maker, model, "instruction.md")
	case Skill:
		if err := checkPlain("skill", name); err != nil {
			return "", err
		}
		return j("skills", name, "SKILL.md")
	case Chat, ChatEvents, ChatFrames, ChatCopy, ChatTools, ChatEnd, ChatPending:
		dir, err := ThreadDir(name)
		if err != nil {
			return "", err
		}
		if p == Chat {
			return j("chats", dir)
		}
		return j("chats", dir, chatFile(p))
	}
	if name != "" {
		return "", fmt.Errorf("%w: place %d takes no name", ErrBadName, p)
	}
	switch p {
	case Config:
		return j("config.json")
	case ToolLists:
		return j("tool-lists.json")
	case Persona:
		return j("instructions", "persona.md")
	case Owner:
		return j("instructions", "owner.md")
	case Instruction:
		return j("instructions", "instruction.md")
	case Notes:
		return j("memory", "notes.md")
	case Skills:
		return j("skills")
	case Files:
		return j("files")
	case Chats:
		return j("chats")
	case SQLite:
		return j("chats", "events.sqlite")
	case Harness:
		return j("harness.json")
	}
	return "", fmt.Errorf("%w: unknown place %d", ErrBadName, p)
}

// ChatDir returns the path of the conversation's folder named dir under
// the agent's chats/: a name IsThreadDir takes, as a listing of chats/
// gives it, which a folder the rule before ThreadDir's made may bear too.
func (a Agent) ChatDir(dir string) (string, error) {
	if a.Dir == "" {
		return "", fmt.Errorf("%w: agent %q has no home", ErrBadName, a.Name)
	}
	if !IsThreadDir(dir) {
		return "", fmt.Errorf("%w: %q is no conversation's folder", ErrBadName, dir)
	}
	return join(a.Dir, []string{"chats", dir}), nil
}

// In returns the path of place p (Chat, ChatEvents … ChatPending) of the
// conversation whose folder is dir: a path Path (Chat) or ChatDir gave,
// or the folder package chatdir found holding a thread.
func In(dir string, p Place) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: no conversation's folder", ErrBadName)
	}
	switch p {
	case Chat:
		return dir, nil
	case ChatEvents, ChatFrames, ChatCopy, ChatTools, ChatEnd, ChatPending:
		return join(dir, []string{chatFile(p)}), nil
	}
	return "", fmt.Errorf("%w: place %d is not in a conversation's folder", ErrBadName, p)
}

// join is filepath.Join(dir, parts...) for parts that are each one clean
// name, as Path's are once checked: when dir is clean and absolute too,
// the names are put together as they are, with one allocation and no
// second pass to clean what is clean already.
func join(dir string, parts []string) string {
	if len(dir) < 2 || dir[0] != '/' || filepath.Clean(dir) != dir {
		return filepath.Join(append([]string{dir}, parts...)...)
	}
	n := len(dir)
	for _, p := range parts {
		n += 1 + len(p)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(dir)
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(p)
	}
	return b.String()
}

func chatFile(p Place) string {
	switch p {
	case ChatEvents:
		return "events.jsonl"
	case ChatFrames:
		return "events.zst"
	case ChatCopy:
		return "chat.md"
	case ChatTools:
		return "tools.json"
	case ChatEnd:
		return "end"
	}
	return "pending"
}

// ModelParts splits a model name into its maker and model (maker/model, as
// OpenRouter names it, or runtime/model for a model on a runtime here), each
// a plain name safe as a folder.
func ModelParts(name string) (maker, model string, err error) {
	maker, model, ok := strings.Cut(name, "/")
	if !ok {
		return "", "", fmt.Errorf("%w: model %q is not maker/model", ErrBadName, name)
	}
	if err := checkModelPart(name, maker); err != nil {
		return "", "", err
	}
	if err := checkModelPart(name, model); err != nil {
		return "", "", err
	}
	return maker, model, nil
}

func checkModelPart(name, part string) error {
	if part == "" || part == "." || part == ".." || len(part) > 200 {
		return fmt.Errorf("%w: model %q", ErrBadName, name)
	}
	for i := 0; i < len(part); i++ {
		// A runtime's model names carry a tag after a colon (qwen3:8b).
		if c := part[i]; !plainByte(c) && c != ':' {
			return fmt.Errorf("%w: model %q has %q", ErrBadName, name, c)
		}
	}
	return nil
}

// Plain checks that name is a plain name, safe as one folder: an agent's,
// a skill's, a driver's.
func Plain(name string) error { return checkPlain("name", name) }

func checkPlain(what, name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 200 {
		return fmt.Errorf("%w: %s %q", ErrBadName, what, name)
	}
	for i := 0; i < len(name); i++ {
		if !plainByte(name[i]) {
			return fmt.Errorf("%w: %s %q has %q", ErrBadName, what, name, name[i])
		}
	}
	return nil
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
