package model

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/loadgen/scripted"
)

// decodeAnthropic decodes a whole Messages API stream held in b.
func decodeAnthropic(b []byte, onText func(string)) (*Response, error) {
	var d anthropicStream
	err := readStream(bytes.NewReader(b), func(s *sseReader) error { return d.decode(s, onText) })
	return &d.resp, err
}

// decodeOpenAI decodes a whole Chat Completions stream held in b.
func decodeOpenAI(b []byte, onText func(string)) (*Response, error) {
	d := openAIStream{provider: "openai"}
	err := readStream(bytes.NewReader(b), func(s *sseReader) error { return d.decode(s, onText) })
	return &d.resp, err
}

// decodeOpenRouter decodes a whole Chat Completions stream from OpenRouter
// held in b, its reasoning kept.
func decodeOpenRouter(b []byte, onText func(string)) (*Response, error) {
	d := openAIStream{provider: "openrouter"}
	err := readStream(bytes.NewReader(b), func(s *sseReader) error { return d.decode(s, onText) })
	return &d.resp, err
}

// decodeOllama decodes a whole /api/chat stream held in b.
func decodeOllama(b []byte, onText func(string)) (*Response, error) {
	var d ollamaStream
	err := readStream(bytes.NewReader(b), func(s *sseReader) error { return d.decode(s, onText) })
	return &d.resp, err
}

// capture returns the raw stream the scripted model srv answers req with,
// in provider's format: its handler's bytes, as they would go on the wire.
func capture(t testing.TB, srv *scripted.Server, provider string, req *Request) []byte {
	t.Helper()
	var body []byte
	var err error
	path := "/anthropic/v1/messages"
	switch provider {
	case "anthropic":
		body, err = appendAnthropicRequest(nil, req)
	case "ollama":
		body, err = appendOllamaRequest(nil, req)
		path = "/ollama/api/chat"
	case "openrouter":
		body, err = appendOpenAIRequest(nil, req, true)
		path = "/openrouter/v1/chat/completions"
	default:
		body, err = appendOpenAIRequest(nil, req, false)
		path = "/openai/v1/chat/completions"
	}
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	if w.Code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, w.Code, w.Body)
	}
	return w.Body.Bytes()
}

// longAnswer is a script whose answer is 8,000 bytes in 2,000 pieces: a
// 2,000-token answer as the providers stream one. Asked to reason, it
// reasons first, 8,000 bytes in 2,000 pieces more. OpenRouter says what
// each cost.
var longAnswer = &scripted.Script{Rules: []scripted.Rule{
	{Match: "reason", Thinking: strings.Repeat("hmm, ", 1600), AnswerBytes: 8000, Chunks: 2000, Usage: scripted.Usage{Cost: &longCost}},
	{Match: "any", AnswerBytes: 8000, Chunks: 2000, Usage: scripted.Usage{Cost: &longCost}},
}}

var longCost = 0.0314

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	srv, _ := serve(t, longAnswer)
	for _, tt := range []struct {
		provider, text string
		decode         func([]byte, func(string)) (*Response, error)
		thinking       int // the thinking's bytes, at least
		most           float64
	}{
		// The answer's builder grows by doubling, about 14 times to 8,000
		// bytes; the rest is the response, its id and model: nothing per
		// token (the reader and the parser come from pools).
		{"anthropic", "long", decodeAnthropic, 0, 30},
		{"openai", "long", decodeOpenAI, 0, 30},
		{"ollama", "long", decodeOllama, 0, 30},
		// 2,000 tokens of reasoning before them: the detail's text grows by
		// doubling too, its type and format are a string each, the
		// thinking one slice, and still nothing per token.
		{"openrouter", "long reason", decodeOpenRouter, 8000, 45},
	} {
		stream := capture(t, srv, tt.provider, &Request{Model: "m", Messages: []Message{{Role: "user", Text: tt.text}}})
		n := 0
		onText := func(string) { n++ }
		resp, err := tt.decode(stream, onText)
		if err != nil || len(resp.Text) != 8000 || n != 2000 || len(resp.Thinking) < tt.thinking {
			t.Fatalf("%s: %v, %d bytes in %d fragments, %d bytes of thinking", tt.provider, err, len(resp.Text), n, len(resp.Thinking))
		}
		if resp.Cost.Reported != (tt.provider == "openrouter") {
			t.Fatalf("%s: cost %+v", tt.provider, resp.Cost)
		}
		allocs := testing.AllocsPerRun(20, func() { _, _ = tt.decode(stream, onText) })
		if allocs > tt.most {
			t.Errorf("%s: %.0f allocations to decode %s, want at most %.0f", tt.provider, allocs, tt.text, tt.most)
		}
	}
}

func benchmarkDecode(b *testing.B, provider, text string, decode func([]byte, func(string)) (*Response, error)) {
	srv, _ := serve(b, longAnswer)
	stream := capture(b, srv, provider, &Request{Model: "m", Messages: []Message{{Role: "user", Text: text}}})
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	onText := func(string) {}
	for b.Loop() {
		if _, err := decode(stream, onText); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnthropicStream decodes a streamed answer of 2,000 tokens.
func BenchmarkAnthropicStream(b *testing.B) { benchmarkDecode(b, "anthropic", "long", decodeAnthropic) }

// BenchmarkOpenAIStream decodes a streamed answer of 2,000 tokens.
func BenchmarkOpenAIStream(b *testing.B) { benchmarkDecode(b, "openai", "long", decodeOpenAI) }

// BenchmarkOpenRouterStream decodes a streamed answer of 2,000 tokens
// after 2,000 tokens of reasoning.
func BenchmarkOpenRouterStream(b *testing.B) {
	benchmarkDecode(b, "openrouter", "long reason", decodeOpenRouter)
}

// BenchmarkOllamaStream decodes a streamed answer of 2,000 tokens.
func BenchmarkOllamaStream(b *testing.B) { benchmarkDecode(b, "ollama", "long", decodeOllama) }

func TestAnthropicErrorEvent(t *testing.T) {
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	_, err := decodeAnthropic([]byte(stream), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 529 || se.Type != "overloaded_error" || se.Message != "Overloaded" {
		t.Errorf("error %v", err)
	}
}

func TestOpenAIErrorChunk(t *testing.T) {
	stream := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n" +
		"data: {\"error\":{\"message\":\"Provider returned error\",\"code\":502}}\n\n"
	_, err := decodeOpenAI([]byte(stream), nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 502 || se.Message != "Provider returned error" {
		t.Errorf("error %v", err)
	}
}

// reasoningStream is a stream from OpenRouter whose deltas are ds, then
// [DONE].
func reasoningStream(ds ...string) []byte {
	var b []byte
	for _, d := range ds {
		b = append(b, `data: {"id":"gen-1","model":"m","choices":[{"index":0,"delta":`+d+`}]}`+"\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func TestOpenRouterReasoning(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		thinking string
		err      error
	}{
		{name: "a text in pieces, the signature last", in: reasoningStream(
			`{"role":"assistant","content":""}`,
			`{"reasoning":"It is ","reasoning_details":[{"type":"reasoning.text","text":"It is ","signature":null,"format":"anthropic-claude-v1","index":0}]}`,
			`{"reasoning":"\"4\".","reasoning_details":[{"type":"reasoning.text","text":"\"4\".","format":"anthropic-claude-v1","index":0}]}`,
			`{"reasoning":null,"reasoning_details":[{"type":"reasoning.text","signature":"c2ln","format":"anthropic-claude-v1","index":0}]}`,
			`{"content":"4"}`),
			thinking: `[{"openrouter":{"type":"reasoning.text","text":"It is \"4\".","signature":"c2ln","format":"anthropic-claude-v1","index":0}}]`},
		{name: "a summary in pieces, then an encrypted detail", in: reasoningStream(
			`{"reasoning":"**Adding**","reasoning_details":[{"type":"reasoning.summary","summary":"**Adding**","format":"openai-responses-v1","index":0}]}`,
			`{"reasoning":" up","reasoning_details":[{"type":"reasoning.summary","summary":" up","format":"openai-responses-v1","index":0}]}`,
			`{"reasoning":null,"reasoning_details":[{"type":"reasoning.encrypted","data":"gAAA==","id":"rs_1","format":"openai-responses-v1","index":1}]}`),
			thinking: `[{"openrouter":{"type":"reasoning.summary","summary":"**Adding** up","format":"openai-responses-v1","index":0}},` +
				`{"openrouter":{"type":"reasoning.encrypted","data":"gAAA==","id":"rs_1","format":"openai-responses-v1","index":1}}]`},
		{name: "two details in one delta", in: reasoningStream(
			`{"reasoning_details":[{"type":"reasoning.text","text":"a","index":0},{"type":"reasoning.encrypted","data":"e","index":1}]}`,
			`{"reasoning_details":[{"type":"reasoning.text","text":"b","index":0}]}`),
			thinking: `[{"openrouter":{"type":"reasoning.text","text":"ab","index":0}},{"openrouter":{"type":"reasoning.encrypted","data":"e","index":1}}]`},
		{name: "pieces without an index go on the last detail of their type", in: reasoningStream(
			`{"reasoning_details":[{"type":"reasoning.text","text":"a"}]}`,
			`{"reasoning_details":[{"type":"reasoning.text","text":"b"}]}`,
			`{"reasoning_details":[{"type":"reasoning.encrypted","data":"e"}]}`),
			thinking: `[{"openrouter":{"type":"reasoning.text","text":"ab"}},{"openrouter":{"type":"reasoning.encrypted","data":"e"}}]`},
		{name: "keys of no field kept as first sent", in: reasoningStream(
			`{"reasoning_details":[{"type":"reasoning.text","text":"a","extra":{"x":"\u00e9"},"index":0}]}`,
			`{"reasoning_details":[{"text":"b","extra":2,"more":null,"index":0}]}`),
			thinking: `[{"openrouter":{"type":"reasoning.text","text":"ab","index":0,"extra":{"x":"\u00e9"},"more":null}}]`},
		{name: "an index skipped", in: reasoningStream(`{"reasoning_details":[{"type":"reasoning.text","text":"a","index":2}]}`),
			thinking: `[{"openrouter":{"type":"reasoning.text","text":"a","index":2}}]`},
		{name: "reasoning without details", in: reasoningStream(`{"reasoning":"2+2"}`, `{"reasoning":" is 4"}`, `{"content":"4"}`),
			thinking: `[{"openrouter":{"type":"reasoning.text","text":"2+2 is 4"}}]`},
		{name: "no reasoning", in: reasoningStream(`{"content":"4","reasoning":null,"reasoning_details":[]}`)},
		{name: "an index past the most", in: reasoningStream(`{"reasoning_details":[{"type":"reasoning.text","text":"a","index":1024}]}`), err: ErrMalformed},
		{name: "an index not a number", in: reasoningStream(`{"reasoning_details":[{"type":"reasoning.text","index":"0"}]}`), err: ErrMalformed},
		{name: "a text not a string", in: reasoningStream(`{"reasoning_details":[{"type":"reasoning.text","text":4,"index":0}]}`), err: ErrMalformed},
		{name: "a detail not an object", in: reasoningStream(`{"reasoning_details":["a"]}`), err: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := decodeOpenRouter(tt.in, nil)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if string(resp.Thinking) != tt.thinking || (tt.thinking == "") != (resp.Thinking == nil) {
				t.Errorf("thinking %s\nwant     %s", resp.Thinking, tt.thinking)
			}
			if len(resp.Thinking) > 0 && fastjson.ValidateBytes(resp.Thinking) != nil {
				t.Errorf("thinking %s is not JSON", resp.Thinking)
			}
			// OpenAI sends no reasoning_details; a stream that has them is not read for them.
			if resp, err := decodeOpenAI(tt.in, nil); err != nil || resp.Thinking != nil {
				t.Errorf("openai: thinking %s, %v", resp.Thinking, err)
			}
		})
	}
}

func TestOllamaLines(t *testing.T) {
	tests := []struct {
		name, in string
		text     string
		thinking string
		calls    string
		err      error
	}{
		{name: "error line mid-answer", in: `{"message":{"content":"par"},"done":false}` + "\n" + `{"error":"an unexpected error: overloaded"}` + "\n", err: ErrUnavailable},
		{name: "no done", in: `{"message":{"content":"par"},"done":false}` + "\n", err: io.EOF},
		{name: "the done line torn", in: `{"message":{"content":"par"},"done":true}`, err: io.ErrUnexpectedEOF},
		{name: "arguments as a string, an id given", in: `{"message":{"content":"","tool_calls":[{"id":"c9","function":{"name":"n","arguments":"{\"a\":[1]}"}}]},"done":false}` + "\n" +
			`{"message":{"content":""},"done":true,"done_reason":"stop"}` + "\n", calls: `c9 n {"a":[1]}`},
		{name: "arguments a number", in: `{"message":{"tool_calls":[{"function":{"name":"n","arguments":3}}]}}` + "\n", err: ErrMalformed},
		{name: "thinking kept without a signature", in: "\n" + `{"message":{"thinking":"a \"b\""},"done":false}` + "\r\n" +
			`{"message":{"content":"x","thinking":"c"},"done":true}` + "\n", text: "x", thinking: `[{"thinking":"a \"b\"c"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := decodeOllama([]byte(tt.in), nil)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Errorf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range resp.Calls {
				calls = append(calls, c.ID+" "+c.Name+" "+string(c.Args))
			}
			if resp.Text != tt.text || string(resp.Thinking) != tt.thinking || strings.Join(calls, "|") != tt.calls {
				t.Errorf("text %q, thinking %s, calls %q", resp.Text, resp.Thinking, calls)
			}
		})
	}
}

func TestParseShow(t *testing.T) {
	tests := []struct {
		body string
		want Runtime
	}{
		{`{"parameters":"temperature 0.7\nnum_ctx 2048","model_info":{"general.architecture":"gemma3","gemma3.context_length":131072}}`, Runtime{Trained: 131072, Runs: 2048}},
		{`{"parameters":"stop \"<|im_end|>\"","model_info":{"qwen3.context_length":40960}}`, Runtime{Trained: 40960, Runs: OllamaDefaultWindow}},
		{`{"model_info":{"general.architecture":"x"}}`, Runtime{Runs: OllamaDefaultWindow}},
	}
	for _, tt := range tests {
		got, err := parseShow([]byte(tt.body))
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}
	if _, err := parseShow([]byte("<html>")); !errors.Is(err, ErrMalformed) {
		t.Errorf("not JSON: %v", err)
	}
}

func TestSSE(t *testing.T) {
	long := strings.Repeat("x", maxLine+1)
	tests := []struct {
		name, in string
		want     []string
		err      error
	}{
		{"crlf and comments", ": ping\r\nevent: a\r\ndata: one\r\n\r\ndata:two\n\n", []string{"one", "two"}, io.EOF},
		{"data lines joined", "data: a\ndata: b\nid: 3\n\n", []string{"a\nb"}, io.EOF},
		{"last event without its blank line", "data: a\n", []string{"a"}, io.EOF},
		{"a torn line", "data: a\n\ndata: {\"ty", []string{"a"}, io.ErrUnexpectedEOF},
		{"a line over the limit", "data: " + long + "\n\n", nil, ErrMalformed},
		{"a long line under it", "data: " + long[:200000] + "\n\n", []string{long[:200000]}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := readStream(strings.NewReader(tt.in), func(s *sseReader) error {
				for {
					d, err := s.next()
					if err != nil {
						return err
					}
					got = append(got, string(d))
				}
			})
			if !errors.Is(err, tt.err) {
				t.Errorf("error %v, want %v", err, tt.err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("events %.40q, want %.40q", got, tt.want)
			}
		})
	}
}

// TestFuzzSeeds writes, under -update, the fuzz targets' seed corpora from
// streams the scripted model sends.
func TestFuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("writes the seeds under -update")
	}
	srv, _ := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "calls", Text: "Two calls.", Chunks: 3, Calls: []scripted.Call{
			{Name: "a__b", Args: `{"x":"ü\"1"}`}, {Name: "c__d", Args: `{"y":[1,2]}`}}},
		{Match: "think", Thinking: "Hm: \"quoted\".", Text: "Done ✓", Chunks: 2,
			Usage: scripted.Usage{Input: 5, Output: 6, CacheRead: 700, CacheWrite: 8, Cost: &longCost}},
		{Match: "cut", Text: "cut short here", Chunks: 4, Cut: true, AfterChunks: 2},
	}})
	names := map[string]string{"anthropic": "Anthropic", "openai": "OpenAI", "openrouter": "OpenRouter", "ollama": "Ollama"}
	for _, provider := range []string{"anthropic", "openai", "openrouter", "ollama"} {
		dir := filepath.Join("testdata", "fuzz", "Fuzz"+names[provider]+"Stream")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"hello", "calls", "think", "cut"} {
			stream := capture(t, srv, provider, &Request{Model: "m", Messages: []Message{{Role: "user", Text: text}}})
			seed := "go test fuzz v1\n[]byte(" + strconv.Quote(string(stream)) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, text), []byte(seed), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkDecoded holds for any stream: a decode either fails in a known way
// or gives an answer whose parts are whole.
func checkDecoded(t *testing.T, resp *Response, err error, frags []string) {
	if err != nil {
		var se *StatusError
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &se) {
			t.Fatalf("an error of no known kind: %v", err)
		}
		return
	}
	if got := strings.Join(frags, ""); got != resp.Text {
		t.Fatalf("fragments make %q, the answer is %q", got, resp.Text)
	}
	for _, c := range resp.Calls {
		if len(c.Args) == 0 || c.Args[0] != '{' || fastjson.ValidateBytes(c.Args) != nil {
			t.Fatalf("call %s: arguments %q are not a JSON object", c.ID, c.Args)
		}
	}
	if len(resp.Thinking) > 0 {
		if err := fastjson.ValidateBytes(resp.Thinking); err != nil || resp.Thinking[0] != '[' {
			t.Fatalf("thinking %q is not a JSON array", resp.Thinking)
		}
	}
	if c := resp.Cost; !(c.USD >= 0 && c.USD <= math.MaxFloat64) || (c.USD != 0 && !c.Reported) {
		t.Fatalf("a cost that is no amount: %+v", c)
	}
}

// fuzzDecode is the body of a decoder's fuzz target: decode takes any
// bytes and what it returns holds (checkDecoded).
func fuzzDecode(decode func([]byte, func(string)) (*Response, error)) func(*testing.T, []byte) {
	return func(t *testing.T, b []byte) {
		var frags []string
		resp, err := decode(b, func(s string) { frags = append(frags, s) })
		checkDecoded(t, resp, err, frags)
	}
}

func FuzzAnthropicStream(f *testing.F) {
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(fuzzDecode(decodeAnthropic))
}

func FuzzOpenAIStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"n\",\"arguments\":\"{\"}}]}}]}\n\ndata: [DONE]\n\n"))
	f.Fuzz(fuzzDecode(decodeOpenAI))
}

func FuzzOpenRouterStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"a\",\"reasoning_details\":[{\"type\":\"reasoning.summary\",\"summary\":\"a\",\"index\":0}," +
		"{\"type\":\"reasoning.encrypted\",\"data\":\"e\",\"index\":1,\"x\":[1]}]}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"only text\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"cost\":0.0042," +
		"\"is_byok\":true,\"cost_details\":{\"upstream_inference_cost\":1e-3}}}\n\ndata: [DONE]\n\n"))
	f.Fuzz(fuzzDecode(decodeOpenRouter))
}

func FuzzOllamaStream(f *testing.F) {
	f.Add([]byte(`{"message":{"content":"a","tool_calls":[{"function":{"name":"n","arguments":"{\"x\":1}"}}]},"done":false}` + "\n" +
		`{"message":{"thinking":"t"},"done":true,"done_reason":"stop","eval_count":3}` + "\n"))
	f.Add([]byte(`{"error":"model 'x' not found"}` + "\n"))
	f.Fuzz(fuzzDecode(decodeOllama))
}

// BenchmarkCall is one whole call over HTTP to the scripted model: the
// client's and the server's work together, a short streamed answer.
func BenchmarkCall(b *testing.B) {
	_, base := serve(b, &scripted.Script{Rules: []scripted.Rule{{Match: "any", AnswerBytes: 400, Chunks: 100}}})
	req := &Request{Model: "m", System: "be brief", Messages: []Message{{Role: "user", Text: "hello"}}}
	for _, provider := range []string{"anthropic", "openai", "ollama"} {
		b.Run(provider, func(b *testing.B) {
			c := client(b, provider, base)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(context.Background(), req, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
