// Package memory is a small memory tool server for running Link Harness
// alone and for load: an MCP server (mcp-go's server side) over an agent's
// home. Link's own memory is the real one; this one keeps notes in
// memory/notes.md, a line a note under "# Your notes", at most MaxNotesBytes,
// and searches, reads and lists the agent's notes, files and the copies of
// its conversations for people.
//
// Calls: remember {note}, change {note, to}, forget {note}, search {query},
// read {path}, list {}. Paths are relative to the home, and only notes,
// files/ and chats/*/chat.md are read. Each call's conversation, as its
// _meta says it, is told to whoever serves it (New's seen).
package memory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/internal/toolconv"
	"lnk.dev/linkharness/store/durable"
)

// MaxNotesBytes is the most notes.md holds; a note past it is refused.
const MaxNotesBytes = 4 << 10

// maxReadBytes is the most of a file one read answers.
const maxReadBytes = 64 << 10

// maxHits is the most lines one search answers.
const maxHits = 50

// notesHeading opens notes.md.
const notesHeading = "# Your notes\n\n"

// Instructions are what the server tells a client at initialize.
const Instructions = "Memory keeps your notes between conversations, one line a note, at most 4 KB in all. " +
	"Remember what you will want later; change or forget a note that is wrong or done. " +
	"Search, read and list reach your notes, your files and the copies of your conversations."

// Server is the memory tool server of one agent's home. It is safe for
// concurrent use: notes are written one call at a time.
type Server struct {
	agent home.Agent

	mu sync.Mutex // guards notes.md's writes
}

// New returns the memory server of the agent whose home is dir, as an MCP
// server ready to be served over any transport. seen, when not nil, is told
// of each call and the conversation it said.
func New(dir string, seen func(call string, c tools.Conversation)) *server.MCPServer {
	m := &Server{agent: home.Agent{Name: filepath.Base(dir), Dir: dir}}
	s := server.NewMCPServer("lnk-memory", "1", server.WithToolCapabilities(false), server.WithInstructions(Instructions))
	s.AddTool(mcp.NewTool("remember", mcp.WithDescription("Keep a note, one line, for later conversations."),
		mcp.WithString("note", mcp.Required(), mcp.Description("the note, one line"))), m.remember)
	s.AddTool(mcp.NewTool("change", mcp.WithDescription("Change a note: the first note holding `note` becomes `to`."),
		mcp.WithString("note", mcp.Required(), mcp.Description("words of the note to change")),
		mcp.WithString("to", mcp.Required(), mcp.Description("the note as it should read"))), m.change)
	s.AddTool(mcp.NewTool("forget", mcp.WithDescription("Forget the first note holding `note`."),
		mcp.WithString("note", mcp.Required(), mcp.Description("words of the note to forget"))), m.forget)
	s.AddTool(mcp.NewTool("search", mcp.WithDescription("Find lines holding the query, in your notes, files and conversations."),
		mcp.WithString("query", mcp.Required(), mcp.Description("words to find, any case"))), m.search)
	s.AddTool(mcp.NewTool("read", mcp.WithDescription("Read one of your notes, files or conversations by the path list gives."),
		mcp.WithString("path", mcp.Required(), mcp.Description("a path as list gives it"))), m.read)
	s.AddTool(mcp.NewTool("list", mcp.WithDescription("List your notes, files and conversations, with their sizes.")), m.list)
	toolconv.Use(s, seen)
	return s
}

func (m *Server) notesPath() string {
	p, _ := m.agent.Path(home.Notes, "") // a home is set: no error
	return p
}

// notes reads the notes, one a line, without the heading.
func (m *Server) notes() ([]string, error) {
	b, err := os.ReadFile(m.notesPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == strings.TrimSpace(notesHeading) {
			continue
		}
		out = append(out, strings.TrimPrefix(line, "- "))
	}
	return out, nil
}

// writeNotes writes the notes whole, refusing past MaxNotesBytes.
func (m *Server) writeNotes(notes []string) (bool, error) {
	var b bytes.Buffer
	b.WriteString(notesHeading)
	for _, n := range notes {
		b.WriteString("- ")
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if b.Len() > MaxNotesBytes {
		return false, nil
	}
	return true, durable.WriteFileAtomic(m.notesPath(), b.Bytes(), 0o600)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (m *Server) remember(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	note := oneLine(req.GetString("note", ""))
	if note == "" {
		return mcp.NewToolResultError("remember needs a note"), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	notes, err := m.notes()
	if err != nil {
		return nil, err
	}
	ok, err := m.writeNotes(append(notes, note))
	if err != nil {
		return nil, err
	}
	if !ok {
		return mcp.NewToolResultError(fmt.Sprintf("Your notes are full (%d bytes at most): change or forget a note first, then remember this one.", MaxNotesBytes)), nil
	}
	return mcp.NewToolResultText("Remembered."), nil
}

// edit changes (to != nil) or forgets the first note holding what.
func (m *Server) edit(what string, to *string) (*mcp.CallToolResult, error) {
	what = oneLine(what)
	if what == "" {
		return mcp.NewToolResultError("name the note by some of its words"), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	notes, err := m.notes()
	if err != nil {
		return nil, err
	}
	for i, n := range notes {
		if !strings.Contains(strings.ToLower(n), strings.ToLower(what)) {
			continue
		}
		if to != nil {
			notes[i] = oneLine(*to)
		} else {
			notes = append(notes[:i], notes[i+1:]...)
		}
		ok, err := m.writeNotes(notes)
		if err != nil {
			return nil, err
		}
		if !ok {
			return mcp.NewToolResultError(fmt.Sprintf("The changed note would take your notes past %d bytes: make it shorter.", MaxNotesBytes)), nil
		}
		return mcp.NewToolResultText("Done: " + n), nil
	}
	return mcp.NewToolResultError("No note holds " + what + "."), nil
}

func (m *Server) change(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	to := req.GetString("to", "")
	if oneLine(to) == "" {
		return mcp.NewToolResultError("change needs the note as it should read (to); to drop a note, forget it"), nil
	}
	return m.edit(req.GetString("note", ""), &to)
}

func (m *Server) forget(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return m.edit(req.GetString("note", ""), nil)
}

// readable lists the files search, read and list reach, as paths relative
// to the home: the notes, every file under files/, each conversation's copy.
func (m *Server) readable() ([]string, error) {
	var out []string
	rel := func(p string) string { r, _ := filepath.Rel(m.agent.Dir, p); return filepath.ToSlash(r) }
	if _, err := os.Stat(m.notesPath()); err == nil {
		out = append(out, rel(m.notesPath()))
	}
	files, _ := m.agent.Path(home.Files, "")
	err := filepath.WalkDir(files, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, rel(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	chats, _ := m.agent.Path(home.Chats, "")
	copies, _ := filepath.Glob(filepath.Join(chats, "*", "chat.md"))
	for _, c := range copies {
		out = append(out, rel(c))
	}
	sort.Strings(out)
	return out, nil
}

func (m *Server) search(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	q := strings.ToLower(strings.TrimSpace(req.GetString("query", "")))
	if q == "" {
		return mcp.NewToolResultError("search needs a query"), nil
	}
	paths, err := m.readable()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	hits := 0
	for _, p := range paths {
		f, err := os.Open(filepath.Join(m.agent.Dir, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan() && hits < maxHits; n++ {
			if strings.Contains(strings.ToLower(sc.Text()), q) {
				fmt.Fprintf(&b, "%s:%d: %s\n", p, n, sc.Text())
				hits++
			}
		}
		f.Close()
	}
	if hits == 0 {
		return mcp.NewToolResultText("Nothing holds " + q + "."), nil
	}
	return mcp.NewToolResultText(b.String()), nil
}

func (m *Server) read(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	want := filepath.ToSlash(filepath.Clean(req.GetString("path", "")))
	paths, err := m.readable()
	if err != nil {
		return nil, err
	}
	i := sort.SearchStrings(paths, want)
	if i == len(paths) || paths[i] != want {
		return mcp.NewToolResultError("No such note, file or conversation: " + want + ". List gives the paths."), nil
	}
	root, err := os.OpenRoot(m.agent.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(want))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return nil, err
	}
	text := string(b[:min(len(b), maxReadBytes)])
	if len(b) > maxReadBytes {
		text += fmt.Sprintf("\n[cut at %d bytes]", maxReadBytes)
	}
	return mcp.NewToolResultText(text), nil
}

func (m *Server) list(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	paths, err := m.readable()
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return mcp.NewToolResultText("No notes, files or conversations yet."), nil
	}
	var b strings.Builder
	for _, p := range paths {
		size := int64(0)
		if fi, err := os.Stat(filepath.Join(m.agent.Dir, filepath.FromSlash(p))); err == nil {
			size = fi.Size()
		}
		fmt.Fprintf(&b, "%s\t%d bytes\n", p, size)
	}
	return mcp.NewToolResultText(b.String()), nil
}
