package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func listen(t testing.TB, s *Script) (*Server, string) {
	t.Helper()
	srv, addr, err := Listen("127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, "http://" + addr.String()
}

func anthropicBody(text string, stream bool) string {
	return `{"model":"m","max_tokens":10,"stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"user","content":[{"type":"text","text":` + strconv.Quote(text) + `}]}]}`
}

func openAIBody(text string, stream bool) string {
	return `{"model":"m","stream":` + strconv.FormatBool(stream) + `,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":` +
		strconv.Quote(text) + `}]}`
}

// post sends body to path and returns the status, Retry-After and body.
func post(t testing.TB, base, path, body string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), b
}

func TestParseScript(t *testing.T) {
	b, err := os.ReadFile("testdata/example.toml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseScript(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Seed != 7 || len(s.Rules) != 6 || s.Rules[0].Calls[0].Args != `{"city":"Oslo"}` || s.Rules[1].Usage.CacheRead != 1200 ||
		s.Rules[1].Usage.Cost == nil || *s.Rules[1].Usage.Cost != 0.0042 {
		t.Errorf("parsed %+v", s)
	}
	bad := []struct{ toml, says string }{
		{"[[rule]]\nmatch = \"x\"\nlatency = 3\n", "latency"},
		{"[[rule]]\nresults = \"maybe\"\n", "results"},
		{"[[rule]]\nround = -1\n", "negative"},
		{"[[rule]]\nstatus = 200\n", "status 200"},
		{"[[rule]]\nstall = true\ncut = true\n", "more than one"},
		{"[[rule]]\n[[rule.call]]\nname = \"a\"\nargs = \"[1]\"\n", "not a JSON object"},
		{"[[rule]]\n[[rule.call]]\nargs = \"{}\"\n", "without a name"},
		{"[[rule]]\nlatency_ms = 10\nlatency_ms_max = 5\n", "latency_ms_max"},
		{"[[rule]]\nanswer_bytes = -1\n", "negative"},
		{"[[rule]]\n[rule.usage]\ncost = -0.5\n", "not an amount"},
		{"[[rule]]\n[rule.usage]\ncost = nan\n", "not an amount"},
		{"seed = \"x\"\n", "script"},
	}
	for _, tt := range bad {
		if _, err := ParseScript([]byte(tt.toml)); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q: error %v, want one saying %q", tt.toml, err, tt.says)
		}
	}
}

func TestDefaultAnswer(t *testing.T) {
	_, base := listen(t, nil)
	for _, path := range []string{"/v1/messages", "/anthropic/v1/messages"} {
		code, _, b := post(t, base, path, anthropicBody("hello", false))
		var m struct {
			Content []struct{ Type, Text string }
			Usage   struct{ InputTokens, OutputTokens int } `json:"usage"`
		}
		if err := json.Unmarshal(b, &m); err != nil || code != 200 {
			t.Fatalf("%s: %d %s %v", path, code, b, err)
		}
		if len(m.Content) != 1 || m.Content[0].Text != defaultText("hello") || !strings.HasPrefix(m.Content[0].Text, "ok: ") {
			t.Errorf("%s: %s", path, b)
		}
	}
	for _, path := range []string{"/v1/chat/completions", "/openai/v1/chat/completions", "/openrouter/v1/chat/completions"} {
		code, _, b := post(t, base, path, openAIBody("hello", false))
		var c struct {
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		if err := json.Unmarshal(b, &c); err != nil || code != 200 {
			t.Fatalf("%s: %d %s %v", path, code, b, err)
		}
		if c.Choices[0].Message.Content != defaultText("hello") || c.Choices[0].FinishReason != "stop" || c.Usage.PromptTokens == 0 {
			t.Errorf("%s: %s", path, b)
		}
	}
	if defaultText("hello") == defaultText("hellp") {
		t.Error("two texts with one digest")
	}
}

// events returns a stream's data lines.
func events(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestStream(t *testing.T) {
	_, base := listen(t, &Script{Rules: []Rule{{
		Match: "any", Text: "héllo wörld", Chunks: 4,
		Calls: []Call{{Name: "a__b", Args: `{"k":"v"}`}},
	}}})
	_, _, b := post(t, base, "/v1/messages", anthropicBody("x", true))
	ev := events(b)
	var text, args strings.Builder
	for _, e := range ev {
		var v struct {
			Type  string
			Delta struct {
				Text        string
				PartialJSON string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		text.WriteString(v.Delta.Text)
		args.WriteString(v.Delta.PartialJSON)
	}
	if text.String() != "héllo wörld" || args.String() != `{"k":"v"}` || ev[len(ev)-1] != `{"type":"message_stop"}` {
		t.Errorf("anthropic stream:\n%s", b)
	}

	_, _, b = post(t, base, "/openai/v1/chat/completions", openAIBody("x", true))
	ev = events(b)
	text.Reset()
	args.Reset()
	for _, e := range ev[:len(ev)-1] {
		var v struct {
			Choices []struct {
				Delta struct {
					Content   string
					ToolCalls []struct{ Function struct{ Arguments string } } `json:"tool_calls"`
				}
			}
			Usage *struct{} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		for _, c := range v.Choices {
			text.WriteString(c.Delta.Content)
			for _, tc := range c.Delta.ToolCalls {
				args.WriteString(tc.Function.Arguments)
			}
		}
	}
	if text.String() != "héllo wörld" || args.String() != `{"k":"v"}` || ev[len(ev)-1] != "[DONE]" ||
		!strings.Contains(ev[len(ev)-2], `"usage":{"prompt_tokens"`) {
		t.Errorf("openai stream:\n%s", b)
	}
}

func TestMatch(t *testing.T) {
	s := &Script{Rules: []Rule{
		{Match: "tool", Results: "no", Text: "first"},
		{Match: "tool", Results: "yes", Text: "after {text}"},
		{Match: "any", Text: "else"},
	}}
	_, base := listen(t, s)
	withResults := `{"model":"m","messages":[{"role":"user","content":"use a tool"},{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r"}]}]}`
	openAIResults := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"use a tool"}]},{"role":"assistant","content":null,"tool_calls":[]},` +
		`{"role":"tool","tool_call_id":"1","content":"r"}]}`
	tests := []struct{ path, body, want string }{
		{"/v1/messages", anthropicBody("a tool please", false), "first"},
		{"/v1/messages", withResults, "after use a tool"},
		{"/v1/messages", anthropicBody("nothing", false), "else"},
		{"/v1/chat/completions", openAIBody("tool", false), "first"},
		{"/v1/chat/completions", openAIResults, "after use a tool"},
	}
	for _, tt := range tests {
		if _, _, b := post(t, base, tt.path, tt.body); !bytes.Contains(b, []byte(`"`+tt.want+`"`)) {
			t.Errorf("%s: %s, want %q", tt.body, b, tt.want)
		}
	}
}

// A rule's round matches the request after that many rounds of tool calls
// since the last user text, in each format: Anthropic's, Chat Completions'
// and the Responses API's.
func TestMatchRound(t *testing.T) {
	s := &Script{Rules: []Rule{
		{Match: "tool", Round: 1, Text: "after one"},
		{Match: "tool", Round: 2, Text: "after two"},
		{Match: "tool", Text: "any round"},
	}}
	_, base := listen(t, s)
	call := `{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"n","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r"}]}`
	anthropic := func(rounds int) string {
		b := `{"model":"m","messages":[{"role":"user","content":"use a tool"}`
		for range rounds {
			b += "," + call
		}
		return b + `]}`
	}
	openAI := func(rounds int) string {
		b := `{"model":"m","messages":[{"role":"user","content":"use a tool"}`
		for range rounds {
			b += `,{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","tool_call_id":"1","content":"r"},{"role":"tool","tool_call_id":"2","content":"r"}`
		}
		return b + `]}`
	}
	responses := func(rounds int) string {
		b := `{"model":"m","input":[{"role":"user","content":"use a tool"}`
		for range rounds {
			b += `,{"type":"function_call","call_id":"1","name":"n","arguments":"{}"},{"type":"function_call","call_id":"2","name":"n","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"1","output":"r"},{"type":"function_call_output","call_id":"2","output":"r"}`
		}
		return b + `]}`
	}
	for _, f := range []struct {
		path string
		body func(int) string
	}{{"/v1/messages", anthropic}, {"/v1/chat/completions", openAI}, {"/v1/responses", responses}} {
		for rounds, want := range []string{"any round", "after one", "after two", "any round"} {
			if _, _, b := post(t, base, f.path, f.body(rounds)); !bytes.Contains(b, []byte(want)) {
				t.Errorf("%s after %d rounds: %s, want %q", f.path, rounds, b, want)
			}
		}
	}
}

func TestFailures(t *testing.T) {
	_, base := listen(t, &Script{Rules: []Rule{
		{Match: "huge", Refuse: true},
		{Match: "busy", Status: 429, RetryAfter: 3},
		{Match: "fail", Status: 500},
	}})
	tests := []struct {
		path, text string
		code       int
		retry      string
		says       string
	}{
		{"/v1/messages", "huge", 400, "", `"prompt is too long: `},
		{"/openai/v1/chat/completions", "huge", 400, "", `"code":"context_length_exceeded"`},
		{"/openrouter/v1/chat/completions", "huge", 400, "", `maximum context length`},
		{"/v1/messages", "busy", 429, "3", `"type":"rate_limit_error"`},
		{"/openai/v1/chat/completions", "busy", 429, "3", `"type":"rate_limit_exceeded"`},
		{"/v1/messages", "fail", 500, "", `"type":"api_error"`},
		{"/openrouter/v1/chat/completions", "fail", 500, "", `"code":500`},
	}
	for _, tt := range tests {
		body := anthropicBody(tt.text, true)
		if !strings.HasSuffix(tt.path, "messages") {
			body = openAIBody(tt.text, true)
		}
		code, retry, b := post(t, base, tt.path, body)
		if code != tt.code || retry != tt.retry || !bytes.Contains(b, []byte(tt.says)) || !json.Valid(b) {
			t.Errorf("%s %s: %d, retry %q, %s", tt.path, tt.text, code, retry, b)
		}
	}
	for _, tt := range []struct{ method, path, body string }{
		{"POST", "/v1/messages", "{"},
		{"POST", "/v1/messages", `{"messages":[]}`},
		{"GET", "/v1/messages", ""},
		{"POST", "/v2/nothing", "{}"},
	} {
		req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || !json.Valid(b) {
			t.Errorf("%s %s %q: %d %s", tt.method, tt.path, tt.body, resp.StatusCode, b)
		}
	}
}

func TestCutAndStall(t *testing.T) {
	srv, base := listen(t, &Script{Rules: []Rule{
		{Match: "cut", Text: "abcdefgh", Chunks: 4, Cut: true, AfterChunks: 2},
		{Match: "stall", Text: "abcdefgh", Chunks: 4, Stall: true, AfterChunks: 1},
	}})
	_, _, b := post(t, base, "/v1/messages", anthropicBody("cut", true))
	if n := strings.Count(string(b), "text_delta"); n != 2 || bytes.Contains(b, []byte("message_stop")) {
		t.Errorf("cut: %d deltas in\n%s", n, b)
	}
	_, _, b = post(t, base, "/v1/chat/completions", openAIBody("cut", true))
	if bytes.Contains(b, []byte("[DONE]")) {
		t.Errorf("cut, and yet done:\n%s", b)
	}

	// A stall holds until the server stops.
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(anthropicBody("stall", true)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		got <- b
	}()
	select {
	case b := <-got:
		t.Fatalf("a stall ended by itself:\n%s", b)
	case <-time.After(200 * time.Millisecond):
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if b := <-got; strings.Count(string(b), "text_delta") != 1 {
		t.Errorf("stall: sent\n%s", b)
	}
}

func TestRequests(t *testing.T) {
	srv, base := listen(t, nil)
	for i := range keptRequests + 5 {
		post(t, base, "/v1/messages", anthropicBody("n"+strconv.Itoa(i), false))
	}
	post(t, base, "/v1/messages", "not json")
	reqs := srv.Requests()
	if len(reqs) != keptRequests || !bytes.Contains(reqs[0], []byte(`"n6"`)) || string(reqs[keptRequests-1]) != "not json" {
		t.Fatalf("%d kept, first %s, last %s", len(reqs), reqs[0], reqs[len(reqs)-1])
	}
	resp, err := http.Get(base + "/_scripted/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("line %d: %s", lines, sc.Bytes())
		}
		lines++
	}
	if lines != keptRequests {
		t.Errorf("%d lines", lines)
	}
}

func TestKeepBytes(t *testing.T) {
	s := New(nil)
	big := make([]byte, keptBytes/3)
	for range 5 {
		s.keep(big)
	}
	if n := len(s.Requests()); n != 3 || s.keptTotal > keptBytes {
		t.Errorf("%d kept, %d bytes", n, s.keptTotal)
	}
}

func TestPlan(t *testing.T) {
	s := &Script{Seed: 1, Rules: []Rule{{Match: "any", Text: "{text}", AnswerBytes: 100, AnswerBytesMax: 5000, LatencyMS: 10, LatencyMSMax: 1000}}}
	req := &request{text: "é", size: 400}
	a, b := plan(s, req, 42), plan(s, req, 42)
	if a.text != b.text || a.latency != b.latency || a.id != b.id {
		t.Error("the same request is answered two ways")
	}
	if len(a.text) < 100 || len(a.text) > 5000 || !utf8.ValidString(a.text) || a.latency < 10*time.Millisecond || a.latency > time.Second {
		t.Errorf("%d bytes after %v", len(a.text), a.latency)
	}
	differ := false
	for seed := range uint64(10) {
		s.Seed = seed + 2
		if c := plan(s, req, 42); c.text != a.text {
			differ = true
		}
	}
	if !differ {
		t.Error("the seed changes nothing")
	}
	if u := a.usage; u.Input != 100 || u.Output != int64(len(a.text)/4) {
		t.Errorf("usage %+v", u)
	}
	if got := fill("ééé", 3, new(splitmix)); got != "é" {
		t.Errorf("fill cut %q", got)
	}
}

func TestPieces(t *testing.T) {
	for _, s := range []string{"", "a", "héllo wörld ✓✓✓", strings.Repeat("ab", 50)} {
		for _, n := range []int{1, 2, 3, 7, 1000} {
			p := pieces(s, n)
			if strings.Join(p, "") != s || len(p) > max(n, 1) {
				t.Errorf("pieces(%q, %d) = %q", s, n, p)
			}
			for _, x := range p {
				if !utf8.ValidString(x) || (x == "" && s != "") {
					t.Errorf("pieces(%q, %d): a piece %q", s, n, x)
				}
			}
		}
	}
	if n := len(pieces(strings.Repeat("x", 8000), 2000)); n != 2000 {
		t.Errorf("%d pieces, want 2000", n)
	}
}

func TestConcurrent(t *testing.T) {
	_, base := listen(t, &Script{Rules: []Rule{{Match: "any", Text: "{text}", Chunks: 3}}})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				text := strconv.Itoa(g) + "-" + strconv.Itoa(i)
				body, path := anthropicBody(text, i%2 == 0), "/v1/messages"
				if g%2 == 0 {
					body, path = openAIBody(text, i%2 == 0), "/openai/v1/chat/completions"
				}
				stream := i%2 == 0
				if code, _, b := post(t, base, path, body); code != 200 || (!stream && !bytes.Contains(b, []byte(text))) {
					t.Errorf("%s: %d %s", text, code, b)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzServeHTTP(f *testing.F) {
	f.Add(0, []byte(anthropicBody("hello", true)))
	f.Add(1, []byte(openAIBody("tool", false)))
	f.Add(2, []byte(`{"messages":[{"role":"user","content":[{"type":"text"}]}]}`))
	f.Add(0, []byte(`{"messages":[{"role":"tool"}],"stream":true}`))
	f.Add(3, []byte(ollamaBody("tool", "")))
	f.Add(4, []byte(responsesBody("hello", true)))
	f.Add(4, []byte(`{"input":"huge"}`))
	f.Add(5, []byte(`{"model":"qwen3:8b"}`))
	srv := New(&Script{Models: []Model{{Name: "qwen3:8b", ContextLength: 40960, NumCtx: 4096}}, Rules: []Rule{
		{Match: "tool", Results: "yes", Text: "{text}", Thinking: "t", Chunks: 3, Calls: []Call{{Name: "a", Args: `{"b":1}`}}},
		{Match: "huge", Refuse: true},
		{Match: "fail", Status: 503, RetryAfter: 1},
		{Match: "cut", Text: "abc", Cut: true, AfterChunks: 1},
		{Match: "any", AnswerBytes: 10, AnswerBytesMax: 300, Chunks: 4},
	}})
	paths := []string{"/v1/messages", "/openai/v1/chat/completions", "/openrouter/v1/chat/completions",
		"/ollama/api/chat", "/v1/responses", "/api/show"}
	f.Fuzz(func(t *testing.T, path int, body []byte) {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("POST", paths[uint(path)%uint(len(paths))], bytes.NewReader(body)))
		if w.Code == 200 && w.Header().Get("Content-Type") == "application/json" && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("an answer that is not JSON: %s", w.Body)
		}
		if w.Code == 200 && w.Header().Get("Content-Type") == "text/event-stream" {
			for _, e := range events(w.Body.Bytes()) {
				if e != "[DONE]" && !json.Valid([]byte(e)) {
					t.Fatalf("an event that is not JSON: %s", e)
				}
			}
		}
		if w.Code == 200 && w.Header().Get("Content-Type") == "application/x-ndjson" {
			for _, l := range bytes.Split(bytes.TrimSuffix(w.Body.Bytes(), []byte("\n")), []byte("\n")) {
				if !json.Valid(l) {
					t.Fatalf("a line that is not JSON: %s", l)
				}
			}
		}
		if w.Code >= 400 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("an error that is not JSON: %s", w.Body)
		}
	})
}

// BenchmarkServe is the server's cost for one streamed answer of 400
// bytes in 10 pieces, without the network.
func BenchmarkServe(b *testing.B) {
	srv := New(&Script{Rules: []Rule{{Match: "any", Text: "{text}", AnswerBytes: 400, Chunks: 10}}})
	for _, tt := range []struct{ name, path, body string }{
		{"anthropic", "/v1/messages", anthropicBody("hello there", true)},
		{"openai", "/v1/chat/completions", openAIBody("hello there", true)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body)))
				if w.Code != 200 {
					b.Fatal(w.Body)
				}
			}
		})
	}
}

// TestPingAndTrickle: a stall with pings keeps sending keep-alives and no
// answer; a trickle sends the whole answer a byte at a time.
func TestPingAndTrickle(t *testing.T) {
	_, base := listen(t, &Script{Rules: []Rule{
		{Match: "ping", Text: "abcdefgh", Chunks: 2, Stall: true, AfterChunks: 1, PingMS: 1},
		{Match: "trickle", Text: "ab", TrickleMS: 1},
	}})
	for _, tt := range []struct {
		path, body, ping string
	}{
		{"/v1/messages", anthropicBody("ping", true), "event: ping\ndata: {\"type\":\"ping\"}\n\n"},
		{"/v1/chat/completions", openAIBody("ping", true), ": keep-alive\n\n"},
	} {
		resp, err := http.Post(base+tt.path, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		// Read until three keep-alives came: they come however long the stall.
		r := bufio.NewReader(resp.Body)
		var got []byte
		for strings.Count(string(got), tt.ping) < 3 {
			line, err := r.ReadBytes('\n')
			got = append(got, line...)
			if err != nil {
				t.Fatalf("%s: %v after\n%s", tt.path, err, got)
			}
		}
		resp.Body.Close()
		if bytes.Contains(got, []byte("message_stop")) || bytes.Contains(got, []byte("[DONE]")) {
			t.Errorf("%s: a stall that pings ended its answer:\n%s", tt.path, got)
		}
	}

	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(openAIBody("trickle", true)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	reads, all := 0, []byte(nil)
	for {
		n, err := resp.Body.Read(buf)
		all = append(all, buf[:n]...)
		reads++
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Reads that came close together may join bytes; at once, the
	// answer's few hundred bytes come in one or two.
	if !bytes.Contains(all, []byte("[DONE]")) || reads < 20 {
		t.Errorf("a trickle in %d reads sent\n%s", reads, all)
	}
}

// Conns counts the connections the model accepted: two calls on one kept
// connection are one, a client of its own a second.
func TestConns(t *testing.T) {
	srv, addr, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := "http://" + addr.String()
	kept := &http.Client{Transport: &http.Transport{}}
	other := &http.Client{Transport: &http.Transport{}}
	for _, hc := range []*http.Client{kept, kept, other} {
		resp, err := hc.Post(base+"/v1/messages", "application/json", strings.NewReader(anthropicBody("hi", false)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := srv.Conns(); n != 2 {
		t.Errorf("%d connections counted, want 2", n)
	}
}
