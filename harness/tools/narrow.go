package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/durable"
)

// Only is a conversation's narrowing: the tools it may be offered, each
// entry a whole tool (memory) or one call (memory__search). The zero value
// offers nothing; a nil *Only is no narrowing.
type Only struct {
	Entries []string
}

// offers tells whether the model name tool__call is within the narrowing.
func (o *Only) offers(name string) bool {
	tool, _, _ := strings.Cut(name, "__")
	return slices.Contains(o.Entries, name) || slices.Contains(o.Entries, tool)
}

// mayOffer tells whether any call of tool can be within the narrowing.
func (o *Only) mayOffer(tool string) bool {
	for _, e := range o.Entries {
		if e == tool || strings.HasPrefix(e, tool+"__") {
			return true
		}
	}
	return false
}

// Narrow is a narrowing narrowed again by a later list: what both allow,
// sorted and without repeats; a nil old is no narrowing yet. A whole tool
// (memory) allows each of its calls (memory__search), so an entry of either
// list is kept when the other names it or its whole tool: memory then
// memory__search is memory__search, and so is memory__search then memory.
// It never allows what either list does not, and never drops what both
// allow by name, whether or not the tool's calls are known yet. It is the
// rule a store's NarrowTools keeps (store/internal/rules), so a
// conversation narrows the same wherever it is kept.
func Narrow(old *Only, later []string) *Only {
	later = clean(later)
	if old == nil {
		return &Only{Entries: later}
	}
	var out []string
	for _, e := range later {
		if slices.ContainsFunc(old.Entries, func(o string) bool { return within(e, o) }) {
			out = append(out, e)
		}
	}
	for _, o := range old.Entries {
		if slices.ContainsFunc(later, func(e string) bool { return within(o, e) }) {
			out = append(out, o)
		}
	}
	return &Only{Entries: clean(out)}
}

// within says whether entry e is allowed by entry a: it is a, or one call
// of the whole tool a.
func within(e, a string) bool {
	tool, _, isCall := strings.Cut(e, "__")
	return e == a || isCall && tool == a
}

// clean trims, sorts and dedupes entries, dropping empty ones.
func clean(entries []string) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseHeader reads a Link-Tools header's value: names separated by commas
// or spaces.
func ParseHeader(v string) []string {
	return clean(strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }))
}

// tools.json's shape.
type onlyFile struct {
	Tools []string `json:"tools"`
}

// maxOnlyBytes bounds tools.json as read.
const maxOnlyBytes = 1 << 20

// ReadOnly reads the narrowing of the conversation in folder dir from its
// tools.json; no file is no narrowing (nil).
func ReadOnly(dir string) (*Only, error) {
	path, err := home.In(dir, home.ChatTools)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readAtMost(f, maxOnlyBytes)
	if err != nil {
		return nil, fmt.Errorf("tools: %s: %w", path, err)
	}
	var of onlyFile
	if err := json.Unmarshal(b, &of); err != nil {
		return nil, fmt.Errorf("tools: %s: %w", path, err)
	}
	return &Only{Entries: clean(of.Tools)}, nil
}

// NarrowFile narrows the tools.json of the conversation in folder dir by a
// later list and returns the narrowing now, written durably before it
// returns.
func NarrowFile(dir string, later []string) (*Only, error) {
	old, err := ReadOnly(dir)
	if err != nil {
		return nil, err
	}
	o := Narrow(old, later)
	if old != nil && slices.Equal(old.Entries, o.Entries) {
		return o, nil
	}
	path, err := home.In(dir, home.ChatTools)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(onlyFile{Tools: o.Entries})
	if err := durable.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("tools: writing %s: %w", path, err)
	}
	return o, nil
}
