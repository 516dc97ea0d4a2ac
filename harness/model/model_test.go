package model

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/harness/internal/golden"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

var update = flag.Bool("update", false, "rewrite the golden files and the fuzz seeds under testdata")

// serve starts the scripted model with script and returns it with its base
// URL.
func serve(t testing.TB, script *scripted.Script) (*scripted.Server, string) {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatal(err)
	}
	srv, addr, err := scripted.Listen("127.0.0.1:0", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, "http://" + addr.String()
}

// client returns provider's client of the scripted model at base, reached
// as the model proxy.
func client(t testing.TB, provider, base string) Client {
	t.Helper()
	env := map[string]string{"LNK_MODEL_PROXY": base}
	c, err := New(provider, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lastRequest is the last body the scripted model got.
func lastRequest(t *testing.T, srv *scripted.Server) []byte {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the scripted model got no request")
	}
	return reqs[len(reqs)-1]
}

var weatherTool = Tool{
	Name:        "weather__now",
	Description: "The weather now in a city.",
	Schema:      []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

var providers = []string{"anthropic", "openai", "openrouter", "ollama"}

func TestText(t *testing.T) {
	srv, base := serve(t, &scripted.Script{Rules: []scripted.Rule{{
		Match: "hello", Text: "Hello! You said: {text}", Chunks: 5,
	}}})
	for _, provider := range providers {
		t.Run(provider, func(t *testing.T) {
			req := &Request{
				Model:     "m-1",
				System:    "You are terse.\nAnswer in \"one\" line.",
				Messages:  []Message{{Role: "user", Text: "hello there, ünïcode ✓"}},
				Tools:     []Tool{weatherTool},
				MaxTokens: 1000,
				Window:    8192,
			}
			var frags []string
			resp, err := client(t, provider, base).Call(context.Background(), req, func(s string) { frags = append(frags, s) })
			if err != nil {
				t.Fatal(err)
			}
			want := "Hello! You said: hello there, ünïcode ✓"
			if resp.Text != want {
				t.Errorf("text %q, want %q", resp.Text, want)
			}
			if len(frags) != 5 || strings.Join(frags, "") != want {
				t.Errorf("fragments %q, want 5 making %q", frags, want)
			}
			if (resp.ResponseID == "") != (provider == "ollama") || resp.Model != "m-1" || resp.Latency <= 0 {
				t.Errorf("id %q, model %q, latency %v", resp.ResponseID, resp.Model, resp.Latency)
			}
			if resp.StopReason != "end_turn" && resp.StopReason != "stop" {
				t.Errorf("stop reason %q", resp.StopReason)
			}
			if resp.Usage.Input <= 0 || resp.Usage.Output <= 0 || len(resp.Calls) != 0 || resp.Thinking != nil {
				t.Errorf("usage %+v, calls %v, thinking %s", resp.Usage, resp.Calls, resp.Thinking)
			}
			golden.Check(t, provider+"_text.golden", lastRequest(t, srv), *update)
		})
	}
}

func TestCalls(t *testing.T) {
	srv, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "weather", Results: "no", Text: "Looking.", Chunks: 4, Calls: []scripted.Call{
			{Name: "weather__now", Args: `{"city":"Oslo"}`},
			{Name: "weather__now", Args: `{"city":"Zürich","units":"metric","days":[1,2,3]}`},
			{Name: "clock__now"},
		}},
		{Match: "weather", Results: "yes", Text: "Cold in both."},
	}})
	for _, provider := range providers {
		t.Run(provider, func(t *testing.T) {
			c := client(t, provider, base)
			req := &Request{
				Model:    "m-1",
				Messages: []Message{{Role: "user", Text: "weather in Oslo and Zürich?"}},
				Tools:    []Tool{weatherTool, {Name: "clock__now", Description: "The time."}},
			}
			resp, err := c.Call(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := []event.Call{
				{Name: "weather__now", Args: []byte(`{"city":"Oslo"}`)},
				{Name: "weather__now", Args: []byte(`{"city":"Zürich","units":"metric","days":[1,2,3]}`)},
				{Name: "clock__now", Args: []byte(`{}`)},
			}
			if len(resp.Calls) != len(want) {
				t.Fatalf("calls %+v, want %d", resp.Calls, len(want))
			}
			ids := map[string]bool{}
			for i, c := range resp.Calls {
				if c.Name != want[i].Name || !bytes.Equal(c.Args, want[i].Args) || c.ID == "" || ids[c.ID] {
					t.Errorf("call %d: %s %s %s, want %s %s", i, c.ID, c.Name, c.Args, want[i].Name, want[i].Args)
				}
				ids[c.ID] = true
			}
			if resp.Text != "Looking." || (resp.StopReason != "tool_use" && resp.StopReason != "tool_calls") {
				t.Errorf("text %q, stop reason %q", resp.Text, resp.StopReason)
			}

			// The round after: the calls and their results go back.
			req.Messages = append(req.Messages,
				Message{Role: "assistant", Text: resp.Text, Thinking: resp.Thinking, Calls: fixedIDs(resp.Calls)},
				Message{Role: "user", Results: []Result{
					{CallID: "c0", Name: "weather__now", Text: "-3 C"},
					{CallID: "c1", Name: "weather__now", Text: "no such city", IsError: true},
					{CallID: "c2", Name: "clock__now", Text: "12:00"},
				}})
			resp, err = c.Call(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "Cold in both." {
				t.Errorf("after the results: %q", resp.Text)
			}
			golden.Check(t, provider+"_results.golden", lastRequest(t, srv), *update)
		})
	}
}

// fixedIDs gives calls ids that do not depend on the request, so a golden
// file holds.
func fixedIDs(calls []event.Call) []event.Call {
	out := append([]event.Call(nil), calls...)
	for i := range out {
		out[i].ID = "c" + string(rune('0'+i))
	}
	return out
}

func TestAnthropicThinking(t *testing.T) {
	srv, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "sum", Results: "no", Thinking: "Add them: 2+2 is \"4\".", Chunks: 3,
			Calls: []scripted.Call{{Name: "calc__add", Args: `{"a":2,"b":2}`}}},
		{Match: "sum", Results: "yes", Thinking: "It said 4.", Text: "4"},
	}})
	c := client(t, "anthropic", base)
	req := &Request{Model: "m-1", Messages: []Message{{Role: "user", Text: "the sum of 2 and 2"}}}
	resp, err := c.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"thinking":"Add them: 2+2 is \"4\".","signature":"sig_` + resp.ResponseID[len("msg_"):] + `"}]`
	if string(resp.Thinking) != want {
		t.Errorf("thinking %s, want %s", resp.Thinking, want)
	}
	if len(resp.Calls) != 1 || resp.Text != "" {
		t.Fatalf("calls %+v, text %q", resp.Calls, resp.Text)
	}
	req.Messages = append(req.Messages,
		Message{Role: "assistant", Thinking: []byte(`[{"thinking":"Add them.","signature":"sig-1"},{"data":"opaque"},` +
			`{"openrouter":{"type":"reasoning.text","text":"OpenRouter's.","signature":"sig-or","index":0}},` +
			`{"openrouter":{"type":"reasoning.encrypted","data":"enc-or","index":1}}]`), Calls: fixedIDs(resp.Calls)},
		Message{Role: "user", Results: []Result{{CallID: "c0", Name: "calc__add", Text: "4"}}, Text: "then sum it up"})
	resp, err = c.Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "4" || !bytes.HasPrefix(resp.Thinking, []byte(`[{"thinking":"It said 4.","signature":"sig_`)) {
		t.Errorf("text %q, thinking %s", resp.Text, resp.Thinking)
	}
	// OpenRouter's blocks, signed and encrypted for it, are not sent.
	golden.Check(t, "anthropic_thinking.golden", lastRequest(t, srv), *update)
}

// OpenRouter's reasoning is kept as its reasoning_details, each marked as
// OpenRouter's, and sent back to OpenRouter alone: not to OpenAI, not to
// Anthropic or Ollama, which could not check it.
func TestOpenRouterThinking(t *testing.T) {
	srv, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "sum", Results: "no", Thinking: "Add them: 2+2 is \"4\".", Chunks: 3,
			Calls: []scripted.Call{{Name: "calc__add", Args: `{"a":2,"b":2}`}}},
		{Match: "sum", Results: "yes", Text: "4"},
	}})
	req := &Request{Model: "anthropic/claude-opus-5.5", Messages: []Message{{Role: "user", Text: "the sum of 2 and 2"}}}
	resp, err := client(t, "openrouter", base).Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"openrouter":{"type":"reasoning.text","text":"Add them: 2+2 is \"4\".","signature":"sig_` +
		strings.TrimPrefix(resp.ResponseID, "chatcmpl-") + `","format":"anthropic-claude-v1","index":0}}]`
	if string(resp.Thinking) != want || len(resp.Calls) != 1 || resp.Text != "" {
		t.Fatalf("thinking %s, want %s; calls %+v, text %q", resp.Thinking, want, resp.Calls, resp.Text)
	}

	// The round after, with thinking of every kind: each provider gets its own.
	req.Messages = append(req.Messages,
		Message{Role: "assistant", Thinking: []byte(`[{"thinking":"Anthropic's.","signature":"sig-1"},{"data":"redacted"},{"thinking":"Ollama's."},` +
			`{"openrouter":{"type":"reasoning.text","text":"Add them: 2+2 is \"4\".","signature":"sig-or","format":"anthropic-claude-v1","index":0}},` +
			`{"openrouter":{"type":"reasoning.encrypted","data":"enc-or","id":"rs_1","format":"openai-responses-v1","index":1,"future":[1,"x"]}}]`),
			Calls: fixedIDs(resp.Calls)},
		Message{Role: "user", Results: []Result{{CallID: "c0", Name: "calc__add", Text: "4"}}})
	for _, provider := range providers {
		resp, err := client(t, provider, base).Call(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		if resp.Text != "4" {
			t.Errorf("%s: text %q", provider, resp.Text)
		}
		body := string(lastRequest(t, srv))
		switch provider {
		case "openrouter", "openai":
			golden.Check(t, provider+"_thinking.golden", []byte(body), *update)
		}
		details := `,"reasoning_details":[{"type":"reasoning.text","text":"Add them: 2+2 is \"4\".","signature":"sig-or","format":"anthropic-claude-v1","index":0},` +
			`{"type":"reasoning.encrypted","data":"enc-or","id":"rs_1","format":"openai-responses-v1","index":1,"future":[1,"x"]}]}`
		if sent := strings.Contains(body, details); sent != (provider == "openrouter") {
			t.Errorf("%s: OpenRouter's reasoning_details sent %v: %s", provider, sent, body)
		}
		if strings.Contains(body, "sig-or") != (provider == "openrouter") || strings.Contains(body, "enc-or") != (provider == "openrouter") {
			t.Errorf("%s: OpenRouter's signature or data sent wrongly: %s", provider, body)
		}
		if provider == "openrouter" && (strings.Contains(body, "sig-1") || strings.Contains(body, "redacted") || strings.Contains(body, "Ollama's")) {
			t.Errorf("openrouter: another provider's thinking sent: %s", body)
		}
	}
}

func TestUsage(t *testing.T) {
	charged := 0.0042
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{{
		Match: "any", Text: "cached", Usage: scripted.Usage{Input: 12, Output: 7, CacheRead: 3000, CacheWrite: 40, Cost: &charged},
	}}})
	want := map[string]event.Usage{
		"anthropic":  {Input: 12, Output: 7, CacheRead: 3000, CacheWrite: 40},
		"openai":     {Input: 12, Output: 7, CacheRead: 3000}, // no count of cache writes
		"openrouter": {Input: 12, Output: 7, CacheRead: 3000},
		"ollama":     {Input: 12, Output: 7}, // no count of the cache at all
	}
	for _, provider := range providers {
		resp, err := client(t, provider, base).Call(context.Background(),
			&Request{Model: "m", Messages: []Message{{Role: "user", Text: "hi"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != want[provider] {
			t.Errorf("%s: usage %+v, want %+v", provider, resp.Usage, want[provider])
		}
		// Only OpenRouter says what it charged.
		if cost := (Cost{USD: charged, Reported: true}); (resp.Cost == cost) != (provider == "openrouter") {
			t.Errorf("%s: cost %+v", provider, resp.Cost)
		}
	}
}

// What OpenRouter's usage object says a call cost: its cost, and for a
// call made with the account's own key for the provider the provider's
// charge too; anything that is not an amount is no cost said.
func TestOpenRouterCost(t *testing.T) {
	for _, tt := range []struct {
		usage string
		want  Cost
	}{
		{`{"prompt_tokens":194,"completion_tokens":2,"cost":0.95}`, Cost{0.95, true}},
		{`{"cost":0.0042,"is_byok":false,"cost_details":{"upstream_inference_cost":0.0042}}`, Cost{0.0042, true}}, // the provider's part of it, not more
		{`{"cost":0,"is_byok":true,"cost_details":{"upstream_inference_cost":0.0360795}}`, Cost{0.0360795, true}},
		{`{"cost":0.001,"is_byok":true,"cost_details":{"upstream_inference_cost":0.02}}`, Cost{0.021, true}},
		{`{"cost":0.001,"is_byok":true,"cost_details":{"upstream_inference_cost":null}}`, Cost{0.001, true}},
		{`{"cost":0}`, Cost{0, true}}, // a free model's: charged nothing
		{`{"prompt_tokens":194,"completion_tokens":2}`, Cost{}},
		{`{"cost":null}`, Cost{}},
		{`{"cost":"0.95"}`, Cost{}},
		{`{"cost":-0.5}`, Cost{}},
		{`{"cost":1e999}`, Cost{}},
		{`{"cost":0,"is_byok":true,"cost_details":{"upstream_inference_cost":-1}}`, Cost{}},
	} {
		v, err := fastjson.Parse(tt.usage)
		if err != nil {
			t.Fatal(err)
		}
		if got := openRouterCost(v); math.Abs(got.USD-tt.want.USD) > 1e-15 || got.Reported != tt.want.Reported {
			t.Errorf("%s: %+v, want %+v", tt.usage, got, tt.want)
		}
	}
	// OpenAI's usage has no cost; a cost in it is not read as one.
	stream := []byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"cost\":0.5}}\n\ndata: [DONE]\n\n")
	if resp, err := decodeOpenAI(stream, nil); err != nil || resp.Cost != (Cost{}) {
		t.Errorf("OpenAI: cost %+v, %v", resp.Cost, err)
	}
	if resp, err := decodeOpenRouter(stream, nil); err != nil || resp.Cost != (Cost{0.5, true}) {
		t.Errorf("OpenRouter: cost %+v, %v", resp.Cost, err)
	}
}

func TestNew(t *testing.T) {
	_, base := serve(t, nil)
	msg := &Request{Model: "m", Messages: []Message{{Role: "user", Text: "hi"}}}
	for _, provider := range providers {
		// Through the override the paths start at /v1/.
		env := map[string]string{"LNK_MODEL_PROXY": "http://127.0.0.1:1", "LNK_MODEL_PROXY_" + strings.ToUpper(provider): base + "/"}
		c, err := New(provider, func(k string) string { return env[k] }, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Call(context.Background(), msg, nil)
		if err != nil {
			t.Fatalf("%s through the override: %v", provider, err)
		}
		if !strings.HasPrefix(resp.Text, "ok: ") {
			t.Errorf("%s: default answer %q", provider, resp.Text)
		}
	}
	if _, err := New("openai", func(string) string { return "" }, nil); err == nil ||
		!strings.Contains(err.Error(), "LNK_MODEL_PROXY_OPENAI") {
		t.Errorf("no proxy: %v", err)
	}
	if _, err := New("gemini", func(string) string { return base }, nil); err == nil {
		t.Error("an unknown provider is accepted")
	}
}

func TestErrors(t *testing.T) {
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "fail", Status: 500},
		{Match: "busy", Status: 429, RetryAfter: 3},
		{Match: "huge", Refuse: true},
		{Match: "cut", Text: "a long answer cut short", Chunks: 5, Cut: true, AfterChunks: 2},
		{Match: "stall", Text: "an answer that stops", Chunks: 5, Stall: true, AfterChunks: 2},
		{Match: "slow", Text: "late", LatencyMS: 5000},
	}})
	tests := []struct {
		text   string
		is     error
		code   int
		retry  time.Duration
		frags  int
		substr string
	}{
		{text: "fail", code: 500},
		{text: "busy", code: 429, retry: 3 * time.Second},
		{text: "huge", is: ErrTooLong, code: 400},
		{text: "cut", is: ErrCut, frags: 2},
		{text: "stall", is: ErrStalled, frags: 2},
		{text: "slow", is: ErrStalled, substr: "no response"},
	}
	for _, provider := range providers {
		c := client(t, provider, base)
		for _, tt := range tests {
			t.Run(provider+"/"+tt.text, func(t *testing.T) {
				t.Parallel()
				req := &Request{Model: "m", Messages: []Message{{Role: "user", Text: tt.text}}, Stall: 300 * time.Millisecond}
				frags := 0
				resp, err := c.Call(context.Background(), req, func(string) { frags++ })
				if err == nil {
					t.Fatalf("no error, answer %+v", resp)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("error %v, want %v", err, tt.is)
				}
				if tt.code != 0 {
					var se *StatusError
					if !errors.As(err, &se) {
						t.Fatalf("error %v is not a *StatusError", err)
					}
					if se.Code != tt.code || se.RetryAfter != tt.retry || se.Provider != provider || se.Message == "" {
						t.Errorf("status error %+v, want code %d, retry after %v", se, tt.code, tt.retry)
					}
					if tt.is == nil && errors.Is(err, ErrTooLong) {
						t.Errorf("%v is taken as too long", err)
					}
				}
				if frags != tt.frags {
					t.Errorf("%d fragments before the error, want %d", frags, tt.frags)
				}
				if !strings.Contains(err.Error(), tt.substr) || !strings.Contains(err.Error(), provider) {
					t.Errorf("error %q does not say %q and %s", err, tt.substr, provider)
				}
			})
		}
	}
}

func TestCanceled(t *testing.T) {
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "x", Stall: true}}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := client(t, "anthropic", base).Call(ctx, &Request{Model: "m", Messages: []Message{{Role: "user", Text: "hi"}}}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStalled) {
		t.Errorf("error %v, want the context's", err)
	}
}

func TestStatusError(t *testing.T) {
	tests := []struct {
		body, header string
		msg, typ     string
		retry        time.Duration
		tooLong      bool
	}{
		{body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`,
			msg: "prompt is too long: 210000 tokens > 200000 maximum", typ: "invalid_request_error", tooLong: true},
		{body: `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			msg: "This model's maximum context length is 128000 tokens.", typ: "context_length_exceeded", tooLong: true},
		{body: `{"error":"the request exceeds the available context window"}`, msg: "the request exceeds the available context window", tooLong: true},
		{body: `{"error":{"message":"Rate limited","code":429}}`, header: "2.5", msg: "Rate limited", retry: 2500 * time.Millisecond},
		{body: "<html>bad gateway</html>", header: "soon", msg: "<html>bad gateway</html>"},
		{body: "", msg: "Bad Gateway"},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: 502, Header: http.Header{}, Body: readCloser(tt.body)}
		if tt.header != "" {
			resp.Header.Set("Retry-After", tt.header)
		}
		e := statusError("p", resp)
		if e.Message != tt.msg || e.Type != tt.typ || e.RetryAfter != tt.retry || errors.Is(e, ErrTooLong) != tt.tooLong {
			t.Errorf("%s: got %+v (too long %v)", tt.body, e, errors.Is(e, ErrTooLong))
		}
	}
	if d := retryAfter(time.Unix(100, 0).UTC().Format(http.TimeFormat), time.Unix(90, 0)); d != 10*time.Second {
		t.Errorf("retry after a date: %v", d)
	}
}

func readCloser(s string) *readCloserString { return &readCloserString{strings.NewReader(s)} }

type readCloserString struct{ *strings.Reader }

func (readCloserString) Close() error { return nil }

func TestRequestErrors(t *testing.T) {
	for _, provider := range providers {
		c := client(t, provider, "http://127.0.0.1:1")
		_, err := c.Call(context.Background(), &Request{Messages: []Message{{Role: "system", Text: "x"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), `role "system"`) {
			t.Errorf("%s: a bad role: %v", provider, err)
		}
	}
	_, err := client(t, "anthropic", "http://127.0.0.1:1").Call(context.Background(),
		&Request{Messages: []Message{{Role: "assistant", Thinking: []byte(`{"thinking":1}`)}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "thinking") {
		t.Errorf("thinking not an array: %v", err)
	}
	notJSON := &Request{Messages: []Message{{Role: "assistant", Thinking: []byte(`[{"openrouter":`)}}}
	if _, err := client(t, "openrouter", "http://127.0.0.1:1").Call(context.Background(), notJSON, nil); err == nil ||
		!strings.Contains(err.Error(), "thinking is not JSON") || !strings.Contains(err.Error(), "openrouter: message 0") {
		t.Errorf("openrouter: thinking not JSON: %v", err)
	}
	if _, err := appendOpenAIRequest(nil, notJSON, false); err != nil {
		t.Errorf("openai, which is sent no thinking, reads it: %v", err)
	}
}

func TestHeaders(t *testing.T) {
	srv := scripted.New(nil)
	got := make(chan http.Header, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	msg := &Request{Model: "m", Messages: []Message{{Role: "user", Text: "hi"}}}
	for _, tt := range []struct {
		provider, key string
		want          map[string]string
	}{
		{"anthropic", "k1", map[string]string{"X-Api-Key": "k1", "Anthropic-Version": "2023-06-01", "Authorization": ""}},
		{"anthropic", "", map[string]string{"X-Api-Key": "", "Anthropic-Version": "2023-06-01"}},
		{"openai", "k2", map[string]string{"Authorization": "Bearer k2", "X-Api-Key": ""}},
		{"openrouter", "", map[string]string{"Authorization": ""}},
		{"ollama", "k3", map[string]string{"Authorization": "Bearer k3", "X-Api-Key": ""}},
	} {
		env := map[string]string{"LNK_MODEL_PROXY": hs.URL, "LNK_MODEL_PROXY_KEY": tt.key}
		c, err := New(tt.provider, func(k string) string { return env[k] }, hs.Client())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(context.Background(), msg, nil); err != nil {
			t.Fatal(err)
		}
		h := <-got
		for k, v := range tt.want {
			if h.Get(k) != v {
				t.Errorf("%s with key %q: %s is %q, want %q", tt.provider, tt.key, k, h.Get(k), v)
			}
		}
		if h.Get("Content-Type") != "application/json" {
			t.Errorf("%s: content type %q", tt.provider, h.Get("Content-Type"))
		}
	}
}

// Ollama's thinking is kept without a signature and sent back as text;
// Anthropic, which cannot check it, is not sent it.
func TestOllamaThinking(t *testing.T) {
	srv, base := serve(t, &scripted.Script{Rules: []scripted.Rule{{Match: "sum", Thinking: "2+2 is 4.", Text: "4", Chunks: 3}}})
	req := &Request{Model: "qwen3:8b", Messages: []Message{{Role: "user", Text: "the sum of 2 and 2"}}}
	resp, err := client(t, "ollama", base).Call(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Thinking) != `[{"thinking":"2+2 is 4."}]` || resp.Text != "4" || resp.StopReason != "stop" {
		t.Fatalf("thinking %s, text %q, stop %q", resp.Thinking, resp.Text, resp.StopReason)
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", Text: resp.Text, Thinking: resp.Thinking}, Message{Role: "user", Text: "sum again"})
	for _, provider := range []string{"ollama", "anthropic"} {
		if _, err := client(t, provider, base).Call(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		body := string(lastRequest(t, srv))
		if sent := strings.Contains(body, `2+2 is 4.`); sent != (provider == "ollama") {
			t.Errorf("%s: thinking sent %v: %s", provider, sent, body)
		}
	}
}

// An overloaded model is told apart from a refusal: another model may
// answer.
func TestUnavailable(t *testing.T) {
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "overloaded", Status: 529}, {Match: "down", Status: 503}, {Match: "busy", Status: 429}, {Match: "fail", Status: 500},
	}})
	for _, provider := range providers {
		for text, want := range map[string]bool{"overloaded": true, "down": true, "busy": false, "fail": false} {
			_, err := client(t, provider, base).Call(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "user", Text: text}}}, nil)
			if errors.Is(err, ErrUnavailable) != want || errors.Is(err, ErrTooLong) {
				t.Errorf("%s %s: %v, unavailable %v", provider, text, err, errors.Is(err, ErrUnavailable))
			}
		}
	}
}

// Overloaded mid-answer is still unavailable, after the text handed on.
func TestUnavailableMidStream(t *testing.T) {
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "abcdefgh", Chunks: 4, Status: 529, AfterChunks: 2}}})
	for _, provider := range providers {
		frags := 0
		_, err := client(t, provider, base).Call(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "user", Text: "x"}}}, func(string) { frags++ })
		if !errors.Is(err, ErrUnavailable) || frags != 2 {
			t.Errorf("%s: %v after %d fragments", provider, err, frags)
		}
	}
}

func TestOwnName(t *testing.T) {
	for _, c := range []struct{ provider, name, want string }{
		{"anthropic", "anthropic/claude-opus-5-5", "claude-opus-5-5"},
		{"anthropic", "claude-opus-5-5", "claude-opus-5-5"},
		{"openrouter", "anthropic/claude-opus-5-5", "anthropic/claude-opus-5-5"},
		{"ollama", "ollama/qwen3:8b", "qwen3:8b"},
		{"openai", "openai/gpt-5.2", "gpt-5.2"},
		{"ollama", "hf.co/org/model:q4", "org/model:q4"}, // only the maker is cut
	} {
		if got := OwnName(c.provider, c.name); got != c.want {
			t.Errorf("OwnName(%q, %q) = %q, want %q", c.provider, c.name, got, c.want)
		}
	}
}
