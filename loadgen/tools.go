package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/loadgen/files"
	"lnk.dev/linkharness/loadgen/memory"
	"lnk.dev/linkharness/loadgen/scripted"
)

// What a message asking for a tool says, and what the scripted model
// answers once the tool's result is back: the rules withTools adds match
// the first two, and send checks each such message's answer starts with
// the third.
const (
	askMemory  = "look it up in your notes"
	askFile    = "read plan.md"
	toolAnswer = "From what the tool said:"
)

// The calls the scripted model makes, as the harness offers them.
const (
	callMemory = "memory__search"
	callFile   = "file__read"
)

// maxToolBody bounds a request body the tool servers' counter reads.
const maxToolBody = 4 << 20

// toolMessage tells whether the k-th message of the run (0-based, counted
// conversation after conversation) asks for a tool, and which call: share
// of the messages do, spread evenly, taking memory__search and file__read
// in turn.
func toolMessage(k int, share float64) string {
	if share <= 0 {
		return ""
	}
	n := int(float64(k+1) * share)
	if n == int(float64(k)*share) {
		return ""
	}
	if n%2 == 1 {
		return callMemory
	}
	return callFile
}

// messageText is what message token says: a plain question, or one that
// makes the scripted model call tool.
func messageText(token, tool string) string {
	switch tool {
	case callMemory:
		return "Message " + token + ": please " + askMemory + " and answer in a few words."
	case callFile:
		return "Message " + token + ": please " + askFile + " and answer in a few words."
	}
	return "Message " + token + ": please answer in a few words."
}

// withTools returns base with rules in front making a message that asks
// for a tool call it, and answering once its result is back. Each of the
// two requests takes the latency, and the answer the length, of base's
// first rule that answers any message.
func withTools(base *scripted.Script) *scripted.Script {
	var d scripted.Rule
	for _, r := range base.Rules {
		if (r.Match == "" || r.Match == "any") && (r.Results == "" || r.Results == "any") {
			d = r
			break
		}
	}
	rules := func(ask, call, args string) []scripted.Rule {
		return []scripted.Rule{
			{Match: ask, Results: "no", LatencyMS: d.LatencyMS, LatencyMSMax: d.LatencyMSMax,
				Calls: []scripted.Call{{Name: call, Args: args}}},
			{Match: ask, Results: "yes", Text: toolAnswer, LatencyMS: d.LatencyMS, LatencyMSMax: d.LatencyMSMax,
				AnswerBytes: d.AnswerBytes, AnswerBytesMax: d.AnswerBytesMax},
		}
	}
	s := *base
	s.Rules = append(rules(askMemory, callMemory, `{"query":"deadline"}`), rules(askFile, callFile, `{"path":"plan.md"}`)...)
	s.Rules = append(s.Rules, base.Rules...)
	return &s
}

// toolHome's notes and files, which the calls find.
const (
	toolNotes = "The deadline for the report is Friday.\nThe owner prefers short answers.\nThe team meets on Tuesdays.\n"
	toolPlan  = "# Plan\n\n1. Draft the report by Wednesday.\n2. Review it on Thursday.\n3. Send it before the deadline, Friday.\n"
)

// toolServers are the built-in memory and file tool servers, served in
// this process on loopback over one home of their own that every agent of
// the run shares (the harness takes one LNK_MEMORY and one LNK_FILE for
// all the agents of a process), counting and timing the calls they
// answer, and the conversation each call said it was made for. It is safe
// for concurrent use.
type toolServers struct {
	memory, file string // MCP URLs, streamable HTTP
	srvs         []*http.Server

	mu       sync.Mutex
	calls    map[string]int             // by call as the harness offers it: memory__search
	sessions int                        // initialize requests
	times    []float64                  // seconds each call took in its server
	convs    map[tools.Conversation]int // calls by the conversation they said
	unsaid   int                        // calls that said no conversation
}

// startTools makes the tool servers' home under dir and serves them.
func startTools(dir string) (*toolServers, error) {
	h := home.Agent{Name: "tools", Dir: filepath.Join(dir, "tools-home")}
	notes, err := h.Path(home.Notes, "")
	if err != nil {
		return nil, fmt.Errorf("loadgen: tools: %w", err)
	}
	filesDir, err := h.Path(home.Files, "")
	if err != nil {
		return nil, fmt.Errorf("loadgen: tools: %w", err)
	}
	for p, b := range map[string]string{notes: "# Your notes\n\n" + toolNotes, filepath.Join(filesDir, "plan.md"): toolPlan} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("loadgen: tools: %w", err)
		}
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			return nil, fmt.Errorf("loadgen: tools: %w", err)
		}
	}
	t := &toolServers{calls: map[string]int{}, convs: map[tools.Conversation]int{}}
	fileServer, err := files.New(h.Dir, t.said)
	if err != nil {
		return nil, fmt.Errorf("loadgen: tools: %w", err)
	}
	if t.memory, err = t.serve("memory", memory.New(h.Dir, t.said)); err != nil {
		return nil, err
	}
	if t.file, err = t.serve("file", fileServer); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// serve serves s at /mcp on a free loopback port, counting its calls as
// name's, and returns its URL.
func (t *toolServers) serve(name string, s *server.MCPServer) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loadgen: %s tool server: %w", name, err)
	}
	inner := server.NewStreamableHTTPServer(s)
	mux := http.NewServeMux()
	mux.Handle("/mcp", t.count(name, inner))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	t.srvs = append(t.srvs, srv)
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/mcp", nil
}

// rpc is what the counter reads of a JSON-RPC request.
type rpc struct {
	Method string `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// count wraps a tool server's handler, counting the sessions started and
// the calls answered, and timing each call.
func (t *toolServers) count(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxToolBody))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req rpc
		json.Unmarshal(body, &req) // a batch or a response: neither is counted
		start := time.Now()
		h.ServeHTTP(w, r)
		took := time.Since(start).Seconds()
		t.mu.Lock()
		defer t.mu.Unlock()
		switch req.Method {
		case "initialize":
			t.sessions++
		case "tools/call":
			t.calls[name+"__"+req.Params.Name]++
			t.times = append(t.times, took)
		}
	})
}

// said counts a call by the conversation it said it was made for.
func (t *toolServers) said(_ string, c tools.Conversation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.Thread == "" {
		t.unsaid++
		return
	}
	t.convs[c]++
}

// conversations returns how many conversations the calls said they were
// made for, and how many calls said none.
func (t *toolServers) conversations() (convs, unsaid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.convs), t.unsaid
}

// seen returns the calls answered by call, the sessions started, and each
// call's time.
func (t *toolServers) seen() (map[string]int, int, []float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	calls := make(map[string]int, len(t.calls))
	for k, v := range t.calls {
		calls[k] = v
	}
	return calls, t.sessions, append([]float64(nil), t.times...)
}

func (t *toolServers) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, s := range t.srvs {
		if s.Shutdown(ctx) != nil {
			s.Close()
		}
	}
}

// wrapHarness writes a script into dir that runs program with the tool
// servers' addresses in its environment, keeping its process id (exec):
// drive.Link starts the harness with no LNK_ variable but the model proxy's.
func wrapHarness(dir, program string, t *toolServers) (string, error) {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	script := "#!/bin/sh\nexport LNK_MEMORY=" + q(t.memory) + " LNK_FILE=" + q(t.file) + "\nexec " + q(program) + ` "$@"` + "\n"
	p := filepath.Join(dir, "lnk-link-harness-with-tools")
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		return "", fmt.Errorf("loadgen: %w", err)
	}
	return p, nil
}
