package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// MaxInstructionBytes is the most of a tool's initialize instructions kept
// for the prompt's tools section.
const MaxInstructionBytes = 2 << 10

// maxListsBytes bounds tool-lists.json as read: a file past it is not ours.
const maxListsBytes = 16 << 20

// List is one tool's list of calls, as tool-lists.json keeps it.
type List struct {
	Name         string `json:"name"`
	Address      string `json:"address"` // AddressHash of its address
	Instructions string `json:"instructions,omitempty"`
	Calls        []Call `json:"calls"`
}

// Call is one call a tool lists, by the tool's own name for it.
type Call struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

type listsFile struct {
	Version int     `json:"version"`
	Tools   []*List `json:"tools"`
}

// listOf makes a tool's list from what it answered: calls in order of name,
// the instructions cut to MaxInstructionBytes.
func listOf(s Server, instructions string, tools []mcp.Tool) (*List, error) {
	l := &List{Name: s.Name, Address: AddressHash(s.URL), Instructions: cutText(instructions, MaxInstructionBytes)}
	seen := map[string]bool{}
	for _, t := range tools {
		if t.Name == "" || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		var schema []byte
		var err error
		if t.RawInputSchema != nil {
			schema = t.RawInputSchema
		} else if schema, err = json.Marshal(t.InputSchema); err != nil {
			return nil, fmt.Errorf("tools: %s: call %s: schema: %w", s.Name, t.Name, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, schema); err != nil {
			return nil, fmt.Errorf("tools: %s: call %s: schema: %w", s.Name, t.Name, err)
		}
		l.Calls = append(l.Calls, Call{Name: t.Name, Description: t.Description, Schema: c.Bytes()})
	}
	sort.Slice(l.Calls, func(i, j int) bool { return l.Calls[i].Name < l.Calls[j].Name })
	return l, nil
}

// readLists reads tool-lists.json; a missing file is no lists.
func readLists(path string) (map[string]*List, []byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*List{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	b, err := readAtMost(f, maxListsBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("tools: %s: %w", path, err)
	}
	var lf listsFile
	if err := json.Unmarshal(b, &lf); err != nil {
		return nil, nil, fmt.Errorf("tools: %s: %w", path, err)
	}
	lists := make(map[string]*List, len(lf.Tools))
	for _, l := range lf.Tools {
		if l == nil || l.Name == "" {
			continue
		}
		for i := range l.Calls { // as a tool lists it: compact, the same bytes every turn
			var c bytes.Buffer
			if err := json.Compact(&c, l.Calls[i].Schema); err == nil {
				l.Calls[i].Schema = c.Bytes()
			}
		}
		lists[l.Name] = l
	}
	return lists, b, nil
}

// encodeLists is tool-lists.json's bytes for the lists of servers, in
// order of name.
func encodeLists(servers []Server, lists map[string]*List) []byte {
	lf := listsFile{Version: 1, Tools: []*List{}}
	for _, s := range servers {
		if l := lists[s.Name]; l != nil {
			lf.Tools = append(lf.Tools, l)
		}
	}
	b, _ := json.MarshalIndent(lf, "", " ") // only strings and raw JSON already checked
	return append(b, '\n')
}

func readAtMost(f *os.File, most int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, most+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > most {
		return nil, fmt.Errorf("over %d bytes", most)
	}
	return b, nil
}

// cutText cuts s to at most n bytes, on a character's boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
