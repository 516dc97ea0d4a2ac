package prompt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrFrontMatter comes when a SKILL.md's front matter cannot be read, or
// lacks a name or a description as the Agent Skills format wants them; the
// skill is left out of the prompt, and the log says why.
var ErrFrontMatter = errors.New("prompt: bad skill front matter")

// The Agent Skills format's limits.
const (
	MaxSkillName        = 64
	MaxSkillDescription = 1024
)

// ParseSkill reads a SKILL.md's front matter, the YAML between a first line
// "---" and the next "---", and returns its name and description. dir is
// the skill's folder name, which the name must be, as the format says. Only
// what the format needs of YAML is read: top-level "key: value" pairs, the
// value plain, quoted ('…' or "…") or a block (| or >); other keys, nested
// ones included, are passed over.
func ParseSkill(dir string, src []byte) (Skill, error) {
	bad := func(format string, args ...any) (Skill, error) {
		return Skill{}, fmt.Errorf("%w: skill %s: %s", ErrFrontMatter, dir, fmt.Sprintf(format, args...))
	}
	text, err := Text(src)
	if err != nil {
		return bad("%v", err)
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], " ") != "---" {
		return bad("SKILL.md does not start with a line \"---\"")
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " "); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return bad("the front matter has no closing \"---\"")
	}
	fields := map[string]string{}
	lines = lines[1:end]
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") || indented(l) {
			continue // blank, a comment, or within a key passed over
		}
		key, v, ok := strings.Cut(l, ":")
		if !ok {
			return bad("line %d, %q, is not \"key: value\"", i+2, l)
		}
		key = strings.TrimSpace(key)
		if key != "name" && key != "description" {
			continue
		}
		if _, dup := fields[key]; dup {
			return bad("%s is given twice", key)
		}
		// The lines after it that are indented continue its value.
		j := i + 1
		for j < len(lines) && (indented(lines[j]) || strings.TrimSpace(lines[j]) == "") {
			j++
		}
		val, err := scalar(strings.TrimSpace(v), lines[i+1:j])
		if err != nil {
			return bad("%s (line %d): %v", key, i+2, err)
		}
		fields[key] = val
		i = j - 1
	}
	s := Skill{Name: fields["name"], Description: strings.Join(strings.Fields(fields["description"]), " ")}
	switch {
	case s.Name == "":
		return bad("no name")
	case len(s.Name) > MaxSkillName || !skillName(s.Name):
		return bad("name %q is not 1 to %d lowercase letters, digits and hyphens", s.Name, MaxSkillName)
	case s.Name != dir:
		return bad("name %q is not its folder's name", s.Name)
	case s.Description == "":
		return bad("no description")
	case utf8.RuneCountInString(s.Description) > MaxSkillDescription:
		return bad("description of %d characters, over %d", utf8.RuneCountInString(s.Description), MaxSkillDescription)
	}
	return s, nil
}

func indented(l string) bool { return strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") }

func skillName(s string) bool {
	if s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// scalar reads a value: v on the key's line, more the indented lines after.
func scalar(v string, more []string) (string, error) {
	var rest []string
	for _, l := range more {
		rest = append(rest, strings.TrimSpace(l))
	}
	switch {
	case v == "" && len(more) > 0 && strings.HasPrefix(strings.TrimSpace(more[0]), "- "):
		return "", errors.New("a list, not text")
	case strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
		return strings.TrimSpace(strings.Join(rest, "\n")), nil
	case strings.HasPrefix(v, `"`):
		s := strings.Join(append([]string{v}, rest...), " ")
		u, err := strconv.Unquote(strings.TrimSpace(s))
		if err != nil {
			return "", errors.New("a double-quoted value not closed or with a bad escape")
		}
		return u, nil
	case strings.HasPrefix(v, "'"):
		s := strings.TrimSpace(strings.Join(append([]string{v}, rest...), " "))
		if len(s) < 2 || !strings.HasSuffix(s, "'") {
			return "", errors.New("a single-quoted value not closed")
		}
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
	case strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{"):
		return "", errors.New("a list or map, not text")
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	if v == "" && len(more) > 0 && strings.Contains(more[0], ":") {
		return "", errors.New("a map, not text")
	}
	return strings.TrimSpace(strings.Join(append([]string{v}, rest...), " ")), nil
}
