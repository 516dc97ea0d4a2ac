package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"lnk.dev/linkharness/store/event"
)

// Stable names the sections that change least, Link's base through who you
// are: they end where the provider's first cache breakpoint is set. The
// standing instructions, the notes and now come after it, since a person
// edits the first and a tool the second between any two turns.
var Stable = []string{"base", "model", "tools", "environment", "repository", "skills", "persona", "owner"}

// Compose joins the sections that have text, in the order given, each
// trimmed of the blank lines around it and separated by one blank line. It
// returns the system prompt and how many of its bytes, from the start, are
// the stable sections (see Stable) that lead it: the part a provider is told
// to cache on its own.
func Compose(sections []Section) (system string, stable int) {
	n := 0
	for _, s := range sections {
		n += len(s.Text) + 2
	}
	var b strings.Builder
	b.Grow(n)
	leading := true
	for _, s := range sections {
		t := strings.Trim(s.Text, "\n")
		if strings.TrimSpace(t) == "" {
			continue
		}
		if leading && !slices.Contains(Stable, s.Name) {
			leading = false
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
		if leading {
			stable = b.Len()
		}
	}
	return b.String(), stable
}

// ErrNotUTF8 comes when an instruction file is not UTF-8 text; it is left
// out of the prompt, and the log says which.
var ErrNotUTF8 = errors.New("prompt: not UTF-8 text")

// Text is a file's bytes as a section's text: a UTF-8 byte order mark is
// dropped, and a file that is not UTF-8 is refused rather than guessed at,
// since its words would reach the model garbled.
func Text(b []byte) (string, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, size := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return "", fmt.Errorf("%w: a bad byte at offset %d; save the file as UTF-8", ErrNotUTF8, off)
	}
	return string(b), nil
}

// NotesHeading heads the notes section.
const NotesHeading = "# Your notes"

// Notes is the notes section: the notes file under NotesHeading, or nothing
// at all for a file with nothing in it, so an empty file costs no tokens.
func Notes(file string) string {
	t := strings.Trim(file, "\n")
	if strings.TrimSpace(t) == "" {
		return ""
	}
	if strings.HasPrefix(t, NotesHeading+"\n") || t == NotesHeading {
		return t
	}
	return NotesHeading + "\n\n" + t
}

// Now is the last section. It holds no time: the date, the time, the
// connection and who is speaking head each message and are kept with it, so
// the system prompt stays the same from turn to turn and the provider's
// cache holds. The section says where now is found instead.
const Now = "# Now\n\nNow is the time in the head of the newest message. Every message's head gives the date and time it was sent, in your owner's time zone, and the connection it came through."

// Environment is the environment section: the files folder the tools work
// in and the connection the conversation started on. Both are as they were
// at the conversation's start and hold nothing that changes as the agent
// works (no listing of the folder), so the section stays the same for the
// whole conversation.
func Environment(files, connection string) string {
	var b strings.Builder
	b.WriteString("# Your environment\n\nYour files folder, where your tools read and write, is ")
	b.WriteString(files)
	b.WriteString(".")
	if connection != "" {
		b.WriteString(" This conversation started on ")
		b.WriteString(connection)
		b.WriteString(".")
	}
	return b.String()
}

// ToolText is what one tool server says of itself: the instructions of its
// MCP initialize answer, kept with the tool's listing.
type ToolText struct {
	Tool string // the tool's name, as the turn offers it
	Text string
}

// MaxToolText is the most of a tool's instructions the prompt holds.
const MaxToolText = 2 << 10

// Tools is the tools' section: each tool's instructions under its name,
// sorted by name, at most MaxToolText each (cut at the last whole line that
// fits, else at the last whole character), for the tools in the list only:
// the caller gives those the turn offers. A tool with no words has no
// heading.
func Tools(tools []ToolText) string {
	list := make([]ToolText, 0, len(tools))
	for _, t := range tools {
		if s := strings.TrimSpace(t.Text); s != "" && t.Tool != "" {
			list = append(list, ToolText{Tool: t.Tool, Text: cut(s, MaxToolText)})
		}
	}
	if len(list) == 0 {
		return ""
	}
	slices.SortStableFunc(list, func(a, b ToolText) int { return strings.Compare(a.Tool, b.Tool) })
	var b strings.Builder
	b.WriteString("# What your tools say of themselves")
	for _, t := range list {
		b.WriteString("\n\n## ")
		b.WriteString(t.Tool)
		b.WriteString("\n\n")
		b.WriteString(t.Text)
	}
	return b.String()
}

// cut returns s cut to at most n bytes: at the last line end that fits, or
// at a character's start when no line end does.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, '\n'); i > 0 {
		return strings.TrimRight(s[:i], " \n")
	}
	for len(s) > 0 && !utf8.RuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s); r == utf8.RuneError {
			s = s[:len(s)-1]
		}
	}
	return s
}

// RepoFile is one folder's instructions for the repository section.
type RepoFile struct {
	Path string // the file, relative to the files folder: AGENTS.md, app/CLAUDE.md
	Text string
}

// RepoNames are the files read as a folder's instructions, the first found
// the only one: AGENTS.md, the standard most coding agents read, else
// CLAUDE.md, so a CLAUDE.md that only points at AGENTS.md is not read twice.
var RepoNames = []string{"AGENTS.md", "CLAUDE.md"}

// Repository is the repository section: each folder's file under its path,
// in the order given (the files folder first, then its folders by name),
// whole files only: the first that would take the section past most, and
// every one after it, is left out and named in left.
func Repository(files []RepoFile, most int) (text string, left []string) {
	s := bounded{head: "# The repository's instructions", most: most}
	for i, f := range files {
		t := strings.Trim(f.Text, "\n")
		if strings.TrimSpace(t) == "" {
			continue
		}
		if !s.add("\n\n## ", f.Path, "\n\n", t) {
			for _, g := range files[i:] {
				left = append(left, g.Path)
			}
			break
		}
	}
	return s.b.String(), left
}

// Skill is one skill's metadata, from its SKILL.md front matter.
type Skill struct {
	Name        string
	Description string
}

// Skills is the skills section: each skill's name and description, sorted
// by name, its description on one line. Whole skills only: when the next
// would take the section past most, it and those after it are left out,
// and left says how many.
func Skills(skills []Skill, most int) (text string, left int) {
	list := slices.Clone(skills)
	slices.SortFunc(list, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	s := bounded{head: "# Your skills\n\nEach skill's instructions are in skills/<name>/SKILL.md in your home: read them when a skill fits the task.\n", most: most}
	for i, sk := range list {
		if !s.add("\n- ", sk.Name, ": ", strings.Join(strings.Fields(sk.Description), " ")) {
			return s.b.String(), len(list) - i
		}
	}
	return s.b.String(), 0
}

// bounded is a section of whole items under its head, at most most bytes:
// the head is written with the first item, and none at all when no item
// fits.
type bounded struct {
	b    strings.Builder
	head string
	most int
}

// add writes an item made of parts, and the head before the first, when
// they fit; it says whether they did.
func (s *bounded) add(parts ...string) bool {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if s.b.Len() == 0 {
		n += len(s.head)
	}
	if s.b.Len()+n > s.most {
		return false
	}
	if s.b.Len() == 0 {
		s.b.WriteString(s.head)
	}
	for _, p := range parts {
		s.b.WriteString(p)
	}
	return true
}

// CacheKey is a conversation's key for the provider's cache
// (prompt_cache_key): the same for every request of the conversation, and
// naming neither the agent nor the thread, which are hashed.
func CacheKey(agent, thread string) string {
	h := sha256.New()
	h.Write([]byte(agent))
	h.Write([]byte{0})
	h.Write([]byte(thread))
	var sum [sha256.Size]byte
	return "lnk-" + hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// cacheThreadKey is the key of a fork's first event naming the thread
// whose provider cache key (CacheKey) its requests carry: the conversation
// it was forked from, or that one's origin. A fork's prompt is its
// origin's up to the replaced message, and so is its cache key (OpenAI's
// prompt_cache_key, sent before the messages), so the cache holds.
const cacheThreadKey = "cache_thread"

// CacheThreadOf returns cache_thread among an event's other keys (its
// Extra), or "".
func CacheThreadOf(extra []byte) string {
	if len(extra) == 0 || !bytes.Contains(extra, []byte(`"`+cacheThreadKey+`"`)) {
		return ""
	}
	var v struct {
		CacheThread string `json:"cache_thread"`
	}
	if json.Unmarshal(append(append([]byte{'{'}, extra...), '}'), &v) != nil {
		return ""
	}
	return v.CacheThread
}

// WithCacheThread is extra with cache_thread set to thread, its own copy:
// a fork's origin keeps the cache_thread it holds, which is its own
// origin's.
func WithCacheThread(extra []byte, thread string) []byte {
	out := append([]byte(nil), extra...)
	if CacheThreadOf(extra) != "" {
		return out
	}
	if len(out) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"`+cacheThreadKey+`":`...)
	return event.AppendString(out, thread)
}
