package model

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
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

// capture returns the raw stream the scripted model at base answers req
// with, in provider's format.
func capture(t testing.TB, base, provider string, req *Request) []byte {
	t.Helper()
	var body []byte
	var err error
	path := "/anthropic/v1/messages"
	if provider == "anthropic" {
		body, err = appendAnthropicRequest(nil, req)
	} else {
		body, err = appendOpenAIRequest(nil, req, false)
		path = "/openai/v1/chat/completions"
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// longAnswer is a script whose answer is 8,000 bytes in 2,000 pieces: a
// 2,000-token answer as the providers stream one.
var longAnswer = &scripted.Script{Rules: []scripted.Rule{{Match: "any", AnswerBytes: 8000, Chunks: 2000}}}

func TestDecodeAllocs(t *testing.T) {
	_, base := serve(t, longAnswer)
	req := &Request{Model: "m", Messages: []Message{{Role: "user", Text: "long"}}}
	for _, tt := range []struct {
		provider string
		decode   func([]byte, func(string)) (*Response, error)
	}{{"anthropic", decodeAnthropic}, {"openai", decodeOpenAI}} {
		stream := capture(t, base, tt.provider, req)
		n := 0
		onText := func(string) { n++ }
		if resp, err := tt.decode(stream, onText); err != nil || len(resp.Text) != 8000 || n != 2000 {
			t.Fatalf("%s: %v, %d bytes in %d fragments", tt.provider, err, len(resp.Text), n)
		}
		// The answer's builder grows by doubling, about 14 times to 8,000
		// bytes; the rest is the response, its id and model: nothing per
		// token (the reader and the parser come from pools).
		allocs := testing.AllocsPerRun(20, func() { _, _ = tt.decode(stream, onText) })
		if allocs > 30 {
			t.Errorf("%s: %.0f allocations to decode 2,000 tokens, want at most 30", tt.provider, allocs)
		}
	}
}

func benchmarkDecode(b *testing.B, provider string, decode func([]byte, func(string)) (*Response, error)) {
	_, base := serve(b, longAnswer)
	stream := capture(b, base, provider, &Request{Model: "m", Messages: []Message{{Role: "user", Text: "long"}}})
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
func BenchmarkAnthropicStream(b *testing.B) { benchmarkDecode(b, "anthropic", decodeAnthropic) }

// BenchmarkOpenAIStream decodes a streamed answer of 2,000 tokens.
func BenchmarkOpenAIStream(b *testing.B) { benchmarkDecode(b, "openai", decodeOpenAI) }

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
	_, base := serve(t, &scripted.Script{Rules: []scripted.Rule{
		{Match: "calls", Text: "Two calls.", Chunks: 3, Calls: []scripted.Call{
			{Name: "a__b", Args: `{"x":"ü\"1"}`}, {Name: "c__d", Args: `{"y":[1,2]}`}}},
		{Match: "think", Thinking: "Hm: \"quoted\".", Text: "Done ✓", Chunks: 2,
			Usage: scripted.Usage{Input: 5, Output: 6, CacheRead: 700, CacheWrite: 8}},
		{Match: "cut", Text: "cut short here", Chunks: 4, Cut: true, AfterChunks: 2},
	}})
	for _, provider := range []string{"anthropic", "openai"} {
		dir := filepath.Join("testdata", "fuzz", "Fuzz"+map[string]string{"anthropic": "Anthropic", "openai": "OpenAI"}[provider]+"Stream")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"hello", "calls", "think", "cut"} {
			stream := capture(t, base, provider, &Request{Model: "m", Messages: []Message{{Role: "user", Text: text}}})
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
}

func FuzzAnthropicStream(f *testing.F) {
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var frags []string
		resp, err := decodeAnthropic(b, func(s string) { frags = append(frags, s) })
		checkDecoded(t, resp, err, frags)
	})
}

func FuzzOpenAIStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"c\",\"function\":{\"name\":\"n\",\"arguments\":\"{\"}}]}}]}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var frags []string
		resp, err := decodeOpenAI(b, func(s string) { frags = append(frags, s) })
		checkDecoded(t, resp, err, frags)
	})
}

// BenchmarkCall is one whole call over HTTP to the scripted model: the
// client's and the server's work together, a short streamed answer.
func BenchmarkCall(b *testing.B) {
	_, base := serve(b, &scripted.Script{Rules: []scripted.Rule{{Match: "any", AnswerBytes: 400, Chunks: 100}}})
	req := &Request{Model: "m", System: "be brief", Messages: []Message{{Role: "user", Text: "hello"}}}
	for _, provider := range []string{"anthropic", "openai"} {
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
