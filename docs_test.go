// Package linkharness holds the checks of the repository's documents, which
// live at its root: every document a comment or a page cites is one the
// repository holds, and every section it names is there.
package linkharness

import (
	"bytes"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// A citation is a document named by its file: an upper-case name ending
// in .md (README.md, profiles/README.md), or any .md a Markdown link
// leads to. The agent's own files that prompts and tests speak of
// (AGENTS.md, CLAUDE.md, SKILL.md) are names of a format, not documents of
// the repository, and a name in lower case (notes.md, chat.md) outside a
// link is a file of an agent's home.
var (
	docName   = regexp.MustCompile("(?:^|[\\s`'\"(\\[,;*|])([^\\s`'\"()\\[\\],;*|<>{}]*[A-Z][A-Z0-9_]*\\.md)\\b")
	mdLink    = regexp.MustCompile(`\]\(([^)\s#]*)(#[^)\s]*)?\)`)
	quotedSec = regexp.MustCompile(`([A-Za-z0-9_./-]*[A-Z][A-Z0-9_]*\.md)(?:, |'s )"([^"]+)"`)
	heading   = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	notCited  = map[string]bool{"AGENTS.md": true, "CLAUDE.md": true, "SKILL.md": true}
)

// TestCitedDocumentsExist fails when a tracked .go file's comment or a
// tracked .md file cites a document the repository does not hold, a
// Markdown link's #anchor that is no heading of its page, or a section
// (a document's name, a comma and the section in quotes) that no heading
// of the document starts with.
func TestCitedDocumentsExist(t *testing.T) {
	// The files git tracks, and those it would (new, not ignored), so a
	// document written and not yet added counts.
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.go", "*.md").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git ls-files: %v", err)
		}
		t.Skipf("no git checkout to list the tracked files of: %v", err)
	}
	tracked := map[string]bool{}
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Stat(f); err != nil {
			continue // removed, and not yet so recorded
		}
		tracked[f] = true
		if !strings.Contains("/"+f, "/testdata/") {
			files = append(files, f)
		}
	}
	docs := newDocPages(tracked, os.ReadFile)
	for _, f := range files {
		text, err := citingText(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range docs.check(f, text) {
			t.Errorf("%s: %s", f, bad)
		}
	}
}

// citingText returns the text of file f that may cite a document: a
// Markdown file whole, a Go file's comments. A comment's lines, and
// comments on lines one after another, are joined with single spaces, so
// a section named across two lines reads as one.
func citingText(f string) (string, error) {
	src, err := os.ReadFile(f)
	if err != nil || !strings.HasSuffix(f, ".go") {
		return string(src), err
	}
	fset := token.NewFileSet()
	var sc scanner.Scanner
	sc.Init(fset.AddFile(f, -1, len(src)), src, nil, scanner.ScanComments)
	var b strings.Builder
	line := 0
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			return b.String(), nil
		}
		if tok != token.COMMENT {
			continue
		}
		// A comment on the line after the last one's goes on its sentence.
		if l := fset.Position(pos).Line; l != line+1 {
			b.WriteString("\n")
		}
		line = fset.Position(pos).Line + strings.Count(lit, "\n")
		lit = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(lit, "*/"), "//"), "/*")
		b.WriteString(strings.Join(strings.Fields(lit), " "))
		b.WriteString(" ")
	}
}

// docPages answers what the repository's documents hold, reading each
// document's headings once.
type docPages struct {
	tracked map[string]bool              // the repository's files, by path from its root
	read    func(string) ([]byte, error) // reads a file by that path
	anchors map[string]map[string]bool   // a page's headings as GitHub anchors them
	heads   map[string][]string          // a page's headings as written
}

// newDocPages returns the documents of tracked, read with read.
func newDocPages(tracked map[string]bool, read func(string) ([]byte, error)) docPages {
	return docPages{tracked: tracked, read: read, anchors: map[string]map[string]bool{}, heads: map[string][]string{}}
}

// check returns what is wrong with the citations of text, file f's.
func (d docPages) check(f, text string) []string {
	var bad []string
	dir := path.Dir(f)
	for _, m := range docName.FindAllStringSubmatch(text, -1) {
		name := m[1]
		if notCited[path.Base(name)] || strings.Contains(name, "//") {
			continue // a format's name, or a URL
		}
		if _, ok := d.resolve(dir, name); !ok {
			bad = append(bad, "cites "+name+", which the repository does not hold")
		}
	}
	if strings.HasSuffix(f, ".md") {
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") || (target != "" && !strings.HasSuffix(target, ".md")) {
				continue // a page elsewhere, or a link to a file that is not a document
			}
			page := f
			if target != "" {
				p := path.Clean(path.Join(dir, target))
				if !d.tracked[p] {
					bad = append(bad, "links to "+target+", which the repository does not hold")
					continue
				}
				page = p
			}
			if anchor != "" && !d.pageAnchors(page)[anchor] {
				bad = append(bad, "links to "+target+"#"+anchor+", which is no heading of "+page)
			}
		}
	}
	for _, m := range quotedSec.FindAllStringSubmatch(text, -1) {
		page, ok := d.resolve(dir, m[1])
		if !ok || notCited[path.Base(m[1])] {
			continue // said above
		}
		if !d.hasSection(page, m[2]) {
			bad = append(bad, "cites "+m[1]+", \""+m[2]+"\", which is no heading of "+page)
		}
	}
	return bad
}

// resolve finds a cited document by its path from the repository's root,
// or from the folder of the file citing it.
func (d docPages) resolve(dir, name string) (string, bool) {
	if strings.HasPrefix(name, "/") {
		return "", false
	}
	for _, p := range []string{path.Clean(name), path.Clean(path.Join(dir, name))} {
		if d.tracked[p] {
			return p, true
		}
	}
	return "", false
}

// hasSection says whether a heading of page starts with sec.
func (d docPages) hasSection(page, sec string) bool {
	d.pageAnchors(page)
	for _, h := range d.heads[page] {
		if strings.HasPrefix(h, sec) {
			return true
		}
	}
	return false
}

// pageAnchors returns the anchors of page's headings, read once.
func (d docPages) pageAnchors(page string) map[string]bool {
	if a, ok := d.anchors[page]; ok {
		return a
	}
	b, _ := d.read(page)
	a := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllSubmatch(stripFences(b), -1) {
		h := string(m[1])
		d.heads[page] = append(d.heads[page], h)
		s := slug(h)
		if n := seen[s]; n > 0 {
			a[s+"-"+strconv.Itoa(n)] = true
		} else {
			a[s] = true
		}
		seen[s]++
	}
	d.anchors[page] = a
	return a
}

// slug is GitHub's anchor of a heading: lower case, letters, digits, '_'
// and '-' kept, each space a '-', anything else left out.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// stripFences blanks the lines of fenced code blocks, whose '#' lines are
// no headings.
func stripFences(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	in := false
	for i, l := range lines {
		if bytes.HasPrefix(bytes.TrimSpace(l), []byte("```")) {
			in = !in
			lines[i] = nil
			continue
		}
		if in {
			lines[i] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// TestCheckCitations checks what check takes for a citation, and where it
// looks for the document and its sections, on pages held in memory.
func TestCheckCitations(t *testing.T) {
	pages := map[string]string{
		"API.md":             "# API\n\n## Spec keys\n\n### POST /v1/agents/{agent}/messages\n\n```\n# not a heading\n```\n",
		"profiles/README.md": "# Profiles\n\n## Load\n\n## Load\n",
	}
	tracked := map[string]bool{"API.md": true, "profiles/README.md": true}
	docs := newDocPages(tracked, func(p string) ([]byte, error) { return []byte(pages[p]), nil })
	for _, c := range []struct {
		file, text string
		bad        int
	}{
		{"x.go", "the spec (API.md, \"Spec keys\")", 0},
		{"x.go", "see DESIGN.md", 1},
		{"x.go", "see /elsewhere/README.md", 1},
		{"x.go", "see profiles/README.md", 0},
		{"x.go", "see README.md", 1},                // not at the root
		{"profiles/README.md", "this README.md", 0}, // beside the file citing it
		{"x.go", "AGENTS.md, CLAUDE.md and skills/<name>/SKILL.md are an agent's", 0},
		{"x.go", "notes.md and chat.md are an agent's", 0},
		{"x.go", "API.md, \"Limits\"", 1},
		{"x.go", "https://example.com/NOTES.md", 0},
		{"profiles/README.md", "[api](../API.md#spec-keys), [msg](../API.md#post-v1agentsagentmessages)", 0},
		{"profiles/README.md", "[api](../API.md#limits)", 1},
		{"profiles/README.md", "[load](#load), [again](#load-1), [not](#not-a-heading)", 1},
		{"API.md", "[p](profiles/README.md) [gone](GONE.md)", 2},
		{"API.md", "[go](store/doc.go) [site](https://example.com/x.md)", 0},
	} {
		if bad := docs.check(c.file, c.text); len(bad) != c.bad {
			t.Errorf("%s: %q: %d faults, want %d: %q", c.file, c.text, len(bad), c.bad, bad)
		}
	}
}
