package fleet

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/loadgen/memory"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
)

// memoryServer serves the memory tool server over dir at /mcp, counting
// the requests it is sent.
func memoryServer(t *testing.T, dir string, hits *atomic.Int64) string {
	t.Helper()
	inner := mcpserver.NewStreamableHTTPServer(memory.New(dir, nil))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// The isolation matrix: 20 agents of one agents file, each with its own
// memory tool server and home (its store), in a process whose own
// environment names a tool server and a memory of its own. Each agent's
// turn calls memory__remember: every call reaches its own agent's server
// and none the process's, and every event lands in its own home. Then each
// agent's key on each other agent's address (380 pairs) is refused alike,
// on its messages, its conversation and _link/recover, with nothing opened
// of any store.
func TestAgentsAlone(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	names := make([]string, n)
	var script scripted.Script
	for i := range names {
		names[i] = fmt.Sprintf("a%02d", i)
		script.Rules = append(script.Rules, scripted.Rule{Match: "note for " + names[i], Results: "no",
			Calls: []scripted.Call{{Name: "memory__remember", Args: fmt.Sprintf(`{"note":"kept by %s"}`, names[i])}}})
	}
	script.Rules = append(script.Rules, scripted.Rule{Match: "any", Results: "yes", Text: "kept"})
	model := httptest.NewServer(scripted.New(&script))
	t.Cleanup(model.Close)

	// The process's own: no agent with an env table may reach them.
	var trapHits atomic.Int64
	trap := memoryServer(t, filepath.Join(dir, "trap"), &trapHits)
	environ := []string{"PATH=" + os.Getenv("PATH"), "LNK_MEMORY=" + trap, "LNK_TOOL_TRAP=" + trap,
		"LNK_MODEL_PROXY=http://127.0.0.1:1", "LNK_HOME=" + filepath.Join(dir, "trap")}

	hits := make([]atomic.Int64, n)
	var text strings.Builder
	keys := make([]string, n)
	for i, name := range names {
		keys[i] = fleettest.Key(name)
		mem := memoryServer(t, filepath.Join(dir, "tools-"+name), &hits[i])
		text.WriteString(fleettest.Agent(t, dir, name, "LNK_MEMORY="+mem, "LNK_MODEL_PROXY="+model.URL, "LNK_HOME="+filepath.Join(dir, "lnk-"+name)))
	}
	var out strings.Builder
	f, file := fleetOf(t, dir, text.String(), environ, &out, 0)
	js, err := f.prepare(file.Units)
	if err != nil {
		t.Fatal(err)
	}
	// The store opener of each agent, wrapped: every conversation opened
	// is counted, so a refused request is seen to read nothing.
	var opened atomic.Int64
	for _, j := range js {
		open := j.agent.Runner.Open
		j.agent.Runner.Open = func(dir, kind string) (store.Conversation, error) {
			opened.Add(1)
			return open(dir, kind)
		}
	}
	if err := f.join(js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll)
	addrs := addresses(t, out.String())

	do := func(method, url, key, body string) (int, string) {
		code, b, err := fleettest.Do(http.DefaultClient, method, url, key, body)
		if err != nil {
			t.Fatal(err)
		}
		return code, b
	}
	for i, name := range names {
		code, body := do("POST", addrs[name]+"/v1/agents/"+name+"/chats/t/messages", keys[i], `{"id":"m1","text":"note for `+name+`"}`)
		if code != 200 || !strings.Contains(body, `"kept"`) {
			t.Fatalf("%s's message: %d %s", name, code, body)
		}
	}
	for i, name := range names {
		notes, err := os.ReadFile(filepath.Join(dir, "tools-"+name, "memory", "notes.md"))
		if err != nil || strings.Count(string(notes), "kept by ") != 1 || !strings.Contains(string(notes), "kept by "+name) {
			t.Errorf("%s's tool server holds %q (%v), want its own note alone", name, notes, err)
		}
		if hits[i].Load() == 0 {
			t.Errorf("%s's tool server was never asked", name)
		}
		events, err := os.ReadFile(filepath.Join(dir, name, "chats", "t", "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, other := range names {
			if has := strings.Contains(string(events), "note for "+other); has != (other == name) {
				t.Errorf("%s's conversation holding %s's message: %v", name, other, has)
			}
		}
		if !strings.Contains(string(events), `"type":"result"`) {
			t.Errorf("%s's conversation holds no tool result:\n%s", name, events)
		}
	}
	if trapHits.Load() != 0 {
		t.Errorf("the process's own tool server was asked %d times", trapHits.Load())
	}
	if _, err := os.Stat(filepath.Join(dir, "trap", "memory")); err == nil {
		t.Errorf("the process's own memory holds notes")
	}

	before := opened.Load()
	refusals := map[string]int{}
	pairs := 0
	for i := range names {
		for j, other := range names {
			if i == j {
				continue
			}
			pairs++
			base := addrs[other] + "/v1/agents/" + other + "/chats/t"
			for _, r := range []struct{ method, url, body string }{
				{"POST", base + "/messages", `{"id":"m2","text":"note for ` + other + `"}`},
				{"GET", base, ""},
				{"GET", addrs[other] + "/_link/recover", ""},
			} {
				code, body := do(r.method, r.url, keys[i], r.body)
				body = strings.ReplaceAll(body, other, "AGENT")
				refusals[fmt.Sprintf("%s %d %s", r.method, code, strings.TrimSpace(body))]++
			}
		}
	}
	if pairs != n*(n-1) {
		t.Fatalf("%d pairs", pairs)
	}
	if got := opened.Load() - before; got != 0 {
		t.Errorf("refused requests opened %d conversations", got)
	}
	// Alike: one answer for each kind of request, the same for every pair,
	// each a 401.
	if len(refusals) != 3 {
		t.Errorf("the refusals differ: %v", refusals)
	}
	for r, count := range refusals {
		if !strings.Contains(r, " 401 ") || count != pairs {
			t.Errorf("refused %d times: %s", count, r)
		}
	}
}
