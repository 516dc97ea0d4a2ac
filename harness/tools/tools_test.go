package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/home"
)

// testServer is a real MCP server (mcp-go's server side) over streamable
// HTTP, counting the initialize requests it saw.
type testServer struct {
	*httptest.Server
	inits atomic.Int64
	ended chan struct{} // a send for each session a client ends (DELETE)
}

func newTestServer(t testing.TB, instructions string) *testServer {
	t.Helper()
	s := server.NewMCPServer("test", "1", server.WithToolCapabilities(false), server.WithInstructions(instructions))
	// Listed out of order: the client offers them in order of name.
	s.AddTool(mcp.NewTool("zeta", mcp.WithDescription("last")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("z"), nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("says it back"), mcp.WithString("text", mcp.Required())),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + r.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("100 KiB")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("ab", 50<<10)), nil
	})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("an error")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it broke"), nil
	})
	ts := &testServer{ended: make(chan struct{}, 100)}
	h := server.NewStreamableHTTPServer(s)
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			select {
			case ts.ended <- struct{}{}:
			default:
			}
		}
		if r.Method == http.MethodPost {
			b, _ := readAll(r)
			if bytes.Contains(b, []byte(`"method":"initialize"`)) {
				ts.inits.Add(1)
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	r.Body.Close()
	r.Body = readCloser{bytes.NewReader(b.Bytes())}
	return b.Bytes(), err
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func newAgent(t testing.TB) home.Agent {
	dir := filepath.Join(t.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	return home.Agent{Name: "ada", Dir: dir}
}

// begin is a turn of a new set of servers for a, begun with ctx: the set
// closed and the turn ended once the test is over.
func begin(t testing.TB, ctx context.Context, a home.Agent, servers []Server, o Options) (*Set, *Turn) {
	t.Helper()
	set := New(a, servers, o)
	t.Cleanup(set.Close)
	tr, err := set.Begin(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.End)
	return set, tr
}

func names(tr *Turn) []string {
	var out []string
	for _, tl := range tr.Tools() {
		out = append(out, tl.Name)
	}
	return out
}

func TestFromEnviron(t *testing.T) {
	got, skipped := FromEnviron([]string{
		"LNK_TOOL_GITHUB=http://gh/mcp", "LNK_MEMORY=http://mem/mcp", "LNK_TOOL_MEMORY=http://other/mcp",
		"LNK_TOOL_ACME_MEMORY=https://team/sse", "LNK_RUN=http://run/mcp", "LNK_TOOL_BAD__NAME=http://x/",
		"LNK_TOOL_FTP=ftp://x/", "LNK_MODEL_PROXY=http://proxy/", "HOME=/root",
	})
	want := []Server{{Name: "acme_memory", URL: "https://team/sse"}, {Name: "github", URL: "http://gh/mcp"}, {Name: "memory", URL: "http://mem/mcp"}, {Name: "run", URL: "http://run/mcp"}}
	if !slices.Equal(got, want) {
		t.Errorf("servers %v, want %v", got, want)
	}
	if len(skipped) != 2 {
		t.Errorf("skipped %v, want the bad name and the ftp address", skipped)
	}
	for name, kept := range map[string]bool{"memory": true, "run": true, "file": true, "code": true, "scheduler": true, "acme_memory": true, "github": false, "browser": false} {
		if Kept(name) != kept {
			t.Errorf("Kept(%s) = %v", name, !kept)
		}
	}
	if !(Server{URL: "http://a/sse"}).sse() || (Server{URL: "http://a/mcp"}).sse() {
		t.Error("an address ending in /sse is SSE, any other streamable HTTP")
	}
}

func TestNarrow(t *testing.T) {
	for _, c := range []struct {
		old   []string // nil: never narrowed
		later []string
		want  []string
	}{
		{nil, []string{"b", "a", "a"}, []string{"a", "b"}},
		{[]string{"a", "b"}, []string{"a", "b", "c"}, []string{"a", "b"}}, // never wider
		{[]string{"a", "b"}, []string{"b"}, []string{"b"}},
		{[]string{"a"}, []string{"c"}, []string{}},
		{[]string{}, []string{"a"}, []string{}},
		// A whole tool allows each of its calls, whichever list names it,
		// before its calls are known.
		{[]string{"memory"}, []string{"memory__search"}, []string{"memory__search"}},
		{[]string{"memory__search"}, []string{"memory"}, []string{"memory__search"}},
		{[]string{"file", "memory"}, []string{"memory__read", "memory__search", "run"}, []string{"memory__read", "memory__search"}},
		{[]string{"memory__read", "memory__search"}, []string{"memory__search", "file"}, []string{"memory__search"}},
		{[]string{"memory"}, []string{"memory", "memory__search"}, []string{"memory", "memory__search"}},
		{[]string{"memory__search"}, []string{"memory__read"}, []string{}},
		{[]string{"memory"}, []string{"memoryx__search", "mem__search"}, []string{}}, // another tool's calls
		{[]string{"memory__search"}, []string{"memory__search__x"}, []string{}},      // a call of memory, not of memory__search
	} {
		var old *Only
		if c.old != nil {
			old = &Only{Entries: c.old}
		}
		if got := Narrow(old, c.later); !slices.Equal(got.Entries, c.want) || got.Entries == nil {
			t.Errorf("Narrow(%v, %v) = %v, want %v", c.old, c.later, got.Entries, c.want)
		}
	}
	if got := ParseHeader(" mem__read, file__find mem__read"); !slices.Equal(got, []string{"file__find", "mem__read"}) {
		t.Errorf("ParseHeader: %v", got)
	}
}

func TestNarrowFile(t *testing.T) {
	a := newAgent(t)
	sub1, _ := a.Path(home.Chat, "sub:1")
	sub2, _ := a.Path(home.Chat, "sub:2")
	if o, err := ReadOnly(sub1); o != nil || err != nil {
		t.Fatalf("never narrowed: %v %v", o, err)
	}
	o, err := NarrowFile(sub1, []string{"x__b", "x__a"})
	if err != nil || !slices.Equal(o.Entries, []string{"x__a", "x__b"}) {
		t.Fatalf("first: %v %v", o, err)
	}
	o, err = NarrowFile(sub1, []string{"x__a", "x__b", "x__c", "y__d"})
	if err != nil || !slices.Equal(o.Entries, []string{"x__a", "x__b"}) {
		t.Fatalf("a wider list widened: %v %v", o, err)
	}
	if o, _ := ReadOnly(sub1); !slices.Equal(o.Entries, []string{"x__a", "x__b"}) {
		t.Fatalf("read back: %v", o.Entries)
	}
	// Narrowed to a whole tool, then to one of its calls before its list
	// is known: the call is kept.
	if _, err := NarrowFile(sub2, []string{"memory"}); err != nil {
		t.Fatal(err)
	}
	o, err = NarrowFile(sub2, []string{"memory__search"})
	if err != nil || !slices.Equal(o.Entries, []string{"memory__search"}) {
		t.Fatalf("memory, then memory__search: %v %v", o, err)
	}
	if o, _ := ReadOnly(sub2); !o.offers("memory__search") || o.offers("memory__read") {
		t.Fatalf("read back: %v", o.Entries)
	}
}

// The lists: names <tool>__<call> in order of name, instructions kept, the
// file written once, a call made, its answer cut at 32 KiB, an error and a
// name not offered answered.
func TestListsAndCalls(t *testing.T) {
	ts := newTestServer(t, "Use echo to hear yourself.")
	a := newAgent(t)
	ctx := context.Background()
	set, tr := begin(t, ctx, a, []Server{{Name: "web", URL: ts.URL}}, Options{})
	if got := names(tr); !slices.Equal(got, []string{"web__big", "web__echo", "web__fail", "web__zeta"}) {
		t.Fatalf("offered %v", got)
	}
	if in := tr.Instructions(); len(in) != 1 || in[0].Tool != "web" || in[0].Text != "Use echo to hear yourself." {
		t.Fatalf("instructions %v", in)
	}
	if r := tr.Call(ctx, "t", "web__echo", []byte(`{"text":"hi"}`)); r.Text != "echo: hi" || r.Error != "" {
		t.Errorf("echo: %+v", r)
	}
	if r := tr.Call(ctx, "t", "web__big", nil); len(r.Text) != MaxResultBytes || !r.Truncated {
		t.Errorf("big: %d bytes, truncated %v", len(r.Text), r.Truncated)
	}
	if r := tr.Call(ctx, "t", "web__fail", nil); r.Error == "" || r.Text != "it broke" {
		t.Errorf("fail: %+v", r)
	}
	if r := tr.Call(ctx, "t", "web__nothing", nil); !strings.Contains(r.Error, "no tool named web__nothing") {
		t.Errorf("not offered: %+v", r)
	}
	path, _ := a.Path(home.ToolLists, "")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lf listsFile
	if err := json.Unmarshal(b, &lf); err != nil || len(lf.Tools) != 1 || lf.Tools[0].Address != AddressHash(ts.URL) || strings.Contains(string(b), ts.URL) {
		t.Fatalf("tool-lists.json: %s", b)
	}
	fi, _ := os.Stat(path)
	tr.End()
	tr2, _ := set.Begin(ctx, nil)
	tr2.Call(ctx, "t", "web__echo", []byte(`{"text":"again"}`)) // a new session lists again: the same list
	tr2.End()
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("tool-lists.json was written again with no list changed")
	}
}

// A turn that never calls a tool starts no session; a kept session is one
// for every turn and conversation; another tool's session ends with its turn.
func TestSessions(t *testing.T) {
	mem, web := newTestServer(t, ""), newTestServer(t, "")
	a := newAgent(t)
	servers := []Server{{Name: "memory", URL: mem.URL}, {Name: "web", URL: web.URL}}
	ctx := context.Background()
	first := New(a, servers, Options{})
	tr, _ := first.Begin(ctx, nil) // the process's first turn lists both
	tr.End()
	first.Close()
	mem.inits.Store(0)
	web.inits.Store(0)

	set := New(a, servers, Options{}) // a new process: the lists come from tool-lists.json
	defer set.Close()
	tr, _ = set.Begin(ctx, nil)
	tr.End()
	if mem.inits.Load() != 0 || web.inits.Load() != 0 {
		t.Fatalf("a turn calling nothing started sessions: memory %d, web %d", mem.inits.Load(), web.inits.Load())
	}
	for i := range 3 { // three turns, as of different conversations
		tr, _ := set.Begin(ctx, nil)
		var wg = make(chan Result, 2)
		go func() { wg <- tr.Call(ctx, "t", "memory__echo", []byte(`{"text":"m"}`)) }()
		go func() { wg <- tr.Call(ctx, "t", "memory__echo", []byte(`{"text":"m"}`)) }()
		<-wg
		<-wg
		tr.Call(ctx, "t", "web__echo", []byte(`{"text":"w"}`))
		tr.End()
		if got := web.inits.Load(); got != int64(i+1) {
			t.Errorf("turn %d: web's sessions %d, want one a turn", i, got)
		}
	}
	if got := mem.inits.Load(); got != 1 {
		t.Errorf("memory's kept session started %d times, want once", got)
	}
	if set.KeptSessions() != 1 {
		t.Errorf("kept sessions %d", set.KeptSessions())
	}
}

// A kept session unused for Idle is ended, and the next call starts another.
func TestKeptSessionEnds(t *testing.T) {
	mem := newTestServer(t, "")
	set := New(newAgent(t), []Server{{Name: "memory", URL: mem.URL}}, Options{Idle: 50 * time.Millisecond})
	defer set.Close()
	ctx := context.Background()
	tr, _ := set.Begin(ctx, nil)
	tr.End()
	<-mem.ended // the session ended, as its server saw
	if set.KeptSessions() != 0 {
		t.Fatal("an idle kept session was not ended")
	}
	tr, _ = set.Begin(ctx, nil)
	if r := tr.Call(ctx, "t", "memory__echo", []byte(`{"text":"x"}`)); r.Error != "" {
		t.Fatal(r.Error)
	}
	tr.End()
	if mem.inits.Load() != 2 {
		t.Errorf("initialize %d times, want 2", mem.inits.Load())
	}
}

// A restart with one tool down offers the same tools from tool-lists.json,
// and a call to it is answered as unavailable; a tool never listed that does
// not answer in time is left out of that turn only, its connection closed.
func TestToolDown(t *testing.T) {
	web := newTestServer(t, "web's words")
	a := newAgent(t)
	ctx := context.Background()
	set := New(a, []Server{{Name: "web", URL: web.URL}}, Options{})
	tr, _ := set.Begin(ctx, nil)
	before, beforeIn := names(tr), tr.Instructions()
	tr.End()
	set.Close()
	web.Close()

	hung := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done(): // the client gave up and closed the connection
		}
	}))
	defer slow.Close()
	defer close(hung)
	start := time.Now()
	_, tr = begin(t, ctx, a, []Server{{Name: "web", URL: web.URL}, {Name: "slow", URL: slow.URL}}, Options{Start: 200 * time.Millisecond})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Begin took %v with a tool hanging", took)
	}
	if got := names(tr); !slices.Equal(got, before) || !slices.Equal(tr.Instructions(), beforeIn) {
		t.Fatalf("after a restart with web down: %v %v, want %v %v", got, tr.Instructions(), before, beforeIn)
	}
	if r := tr.Call(ctx, "t", "web__echo", []byte(`{"text":"x"}`)); !strings.Contains(r.Error, "unavailable") {
		t.Errorf("a call to a tool down: %+v", r)
	}
}

func TestCut(t *testing.T) {
	s := strings.Repeat("é", MaxResultBytes) // two bytes each
	got, cut := Cut(s)
	if !cut || len(got) != MaxResultBytes || !strings.HasSuffix(got, "é") {
		t.Errorf("cut to %d bytes, %v", len(got), cut)
	}
	s = strings.Repeat("a", MaxResultBytes-1) + "é"
	if got, _ := Cut(s); len(got) != MaxResultBytes-1 {
		t.Errorf("a character cut in two: %d bytes", len(got))
	}
}
