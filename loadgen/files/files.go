// Package files is a small file tool server for running Link Harness alone
// and for load: an MCP server (mcp-go's server side) over an agent's files/
// folder, offered as file__read, file__write, file__replace and file__find.
// Link's own file server, in a sandbox of its own, is the real one; this one
// keeps every path inside files/ through os.Root. Each call's conversation,
// as its _meta says it, is told to whoever serves it (New's seen).
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/internal/toolconv"
)

// maxReadBytes is the most of a file one read answers.
const maxReadBytes = 64 << 10

// maxFound is the most paths one find answers.
const maxFound = 200

// Instructions are what the server tells a client at initialize.
const Instructions = "File works on the files of your workspace; paths are relative to it."

type files struct{ dir string }

// New returns the file server over the files/ folder of the agent whose
// home is dir, as an MCP server ready to be served over any transport.
// seen, when not nil, is told of each call and the conversation it said.
func New(dir string, seen func(call string, c tools.Conversation)) (*server.MCPServer, error) {
	p, err := home.Agent{Dir: dir}.Path(home.Files, "")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		return nil, err
	}
	f := &files{dir: p}
	s := server.NewMCPServer("lnk-file", "1", server.WithToolCapabilities(false), server.WithInstructions(Instructions))
	s.AddTool(mcp.NewTool("read", mcp.WithDescription("Read a file."),
		mcp.WithString("path", mcp.Required())), f.read)
	s.AddTool(mcp.NewTool("write", mcp.WithDescription("Write a file whole, making its folders."),
		mcp.WithString("path", mcp.Required()), mcp.WithString("text", mcp.Required())), f.write)
	s.AddTool(mcp.NewTool("replace", mcp.WithDescription("Replace the one place a file holds `old` with `new`."),
		mcp.WithString("path", mcp.Required()), mcp.WithString("old", mcp.Required()), mcp.WithString("new", mcp.Required())), f.replace)
	s.AddTool(mcp.NewTool("find", mcp.WithDescription("Find files whose path matches a pattern (path.Match, e.g. *.md or notes/*)."),
		mcp.WithString("pattern", mcp.Required())), f.find)
	toolconv.Use(s, seen)
	return s, nil
}

func (f *files) root() (*os.Root, error) { return os.OpenRoot(f.dir) }

func clean(p string) string { return filepath.FromSlash(path.Clean("/" + p))[1:] }

func (f *files) read(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r, err := f.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	file, err := r.Open(clean(req.GetString("path", "")))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxReadBytes+1))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	text := string(b[:min(len(b), maxReadBytes)])
	if len(b) > maxReadBytes {
		text += fmt.Sprintf("\n[cut at %d bytes]", maxReadBytes)
	}
	return mcp.NewToolResultText(text), nil
}

func (f *files) write(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := clean(req.GetString("path", ""))
	if p == "" {
		return mcp.NewToolResultError("write needs a path"), nil
	}
	r, err := f.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if d := filepath.Dir(p); d != "." {
		if err := r.MkdirAll(d, 0o700); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
	}
	text := req.GetString("text", "")
	if err := r.WriteFile(p, []byte(text), 0o600); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("Wrote %d bytes to %s.", len(text), filepath.ToSlash(p))), nil
}

func (f *files) replace(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := clean(req.GetString("path", ""))
	old, repl := req.GetString("old", ""), req.GetString("new", "")
	if old == "" {
		return mcp.NewToolResultError("replace needs the text to replace (old)"), nil
	}
	r, err := f.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := r.ReadFile(p)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	switch n := strings.Count(string(b), old); n {
	case 0:
		return mcp.NewToolResultError(filepath.ToSlash(p) + " does not hold the text to replace."), nil
	case 1:
	default:
		return mcp.NewToolResultError(fmt.Sprintf("%s holds the text to replace %d times: give more of it, so it is one place.", filepath.ToSlash(p), n)), nil
	}
	if err := r.WriteFile(p, []byte(strings.Replace(string(b), old, repl, 1)), 0o600); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("Replaced."), nil
}

func (f *files) find(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	pattern := req.GetString("pattern", "*")
	if _, err := path.Match(pattern, ""); err != nil {
		return mcp.NewToolResultError("bad pattern: " + err.Error()), nil
	}
	var out []string
	stop := errors.New("enough")
	err := fs.WalkDir(os.DirFS(f.dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if ok, _ := path.Match(pattern, p); ok || matchBase(pattern, p) {
			out = append(out, p)
			if len(out) == maxFound {
				return stop
			}
		}
		return nil
	})
	if err != nil && err != stop {
		return nil, err
	}
	if len(out) == 0 {
		return mcp.NewToolResultText("No file matches " + pattern + "."), nil
	}
	return mcp.NewToolResultText(strings.Join(out, "\n")), nil
}

// matchBase lets a pattern without a slash match a file in any folder.
func matchBase(pattern, p string) bool {
	if strings.Contains(pattern, "/") {
		return false
	}
	ok, _ := path.Match(pattern, path.Base(p))
	return ok
}
