package scripted

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func ollamaBody(text string, stream string) string {
	b := `{"model":"qwen3:8b","messages":[{"role":"user","content":` + strconv.Quote(text) + `}]`
	if stream != "" {
		b += `,"stream":` + stream
	}
	return b + `,"options":{"num_ctx":8192}}`
}

func responsesBody(text string, stream bool) string {
	return `{"model":"m","instructions":"be brief","stream":` + strconv.FormatBool(stream) +
		`,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":` + strconv.Quote(text) + `}]}]}`
}

var formatScript = &Script{
	Rules: []Rule{
		{Match: "huge", Refuse: true},
		{Match: "busy", Status: 529},
		{Match: "cut", Text: "abcdefgh", Chunks: 4, Cut: true, AfterChunks: 2},
		{Match: "any", Thinking: "hm", Text: "héllo wörld", Chunks: 4,
			Calls: []Call{{Name: "a__b", Args: `{"k":"v"}`}}, Usage: Usage{Input: 10, Output: 5, CacheRead: 100}},
	},
	Models: []Model{{Name: "qwen3:8b", ContextLength: 40960, NumCtx: 8192}, {Name: "tiny:1b", ContextLength: 2048}},
}

// Ollama streams one JSON object a line, unless told not to; the last says
// done with the counts.
func TestOllama(t *testing.T) {
	_, base := listen(t, formatScript)
	for _, stream := range []string{"", "true"} {
		code, _, b := post(t, base, "/ollama/api/chat", ollamaBody("x", stream))
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		var text, thinking strings.Builder
		var calls []string
		for i, l := range lines {
			var v struct {
				Message struct {
					Content, Thinking string
					ToolCalls         []struct {
						Function struct {
							Name      string
							Arguments json.RawMessage
						}
					} `json:"tool_calls"`
				}
				Done            bool
				PromptEvalCount int `json:"prompt_eval_count"`
				EvalCount       int `json:"eval_count"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("line %d %q: %v", i, l, err)
			}
			text.WriteString(v.Message.Content)
			thinking.WriteString(v.Message.Thinking)
			for _, c := range v.Message.ToolCalls {
				calls = append(calls, c.Function.Name+string(c.Function.Arguments))
			}
			if v.Done != (i == len(lines)-1) || (v.Done && (v.PromptEvalCount != 10 || v.EvalCount != 5)) {
				t.Errorf("line %d: %s", i, l)
			}
		}
		if code != 200 || text.String() != "héllo wörld" || thinking.String() != "hm" || len(calls) != 1 || calls[0] != `a__b{"k":"v"}` || len(lines) < 6 {
			t.Errorf("stream %q: %d\n%s", stream, code, b)
		}
	}
	_, _, b := post(t, base, "/api/chat", ollamaBody("x", "false"))
	if bytes.Count(b, []byte("\n")) != 1 || !bytes.Contains(b, []byte(`"content":"héllo wörld","thinking":"hm","tool_calls":[`)) || !json.Valid(b) {
		t.Errorf("whole:\n%s", b)
	}
	code, _, b := post(t, base, "/api/chat", ollamaBody("huge", ""))
	if code != 400 || !bytes.Contains(b, []byte("context window")) || !json.Valid(b) {
		t.Errorf("refusal: %d %s", code, b)
	}
	code, _, b = post(t, base, "/ollama/api/chat", ollamaBody("cut", ""))
	if code != 200 || bytes.Contains(b, []byte(`"done":true`)) || bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("cut: %d %s", code, b)
	}
}

func TestShow(t *testing.T) {
	_, base := listen(t, formatScript)
	tests := []struct {
		body string
		code int
		has  []string
	}{
		{`{"model":"qwen3:8b"}`, 200, []string{`"qwen3.context_length":40960`, `num_ctx 8192`}},
		{`{"name":"tiny:1b"}`, 200, []string{`"tiny.context_length":2048`}},
		{`{"model":"nope:1b"}`, 404, []string{`"error":"model 'nope:1b' not found"`}},
		{`{`, 400, []string{`"error"`}},
	}
	for _, tt := range tests {
		code, _, b := post(t, base, "/ollama/api/show", tt.body)
		if code != tt.code || !json.Valid(b) {
			t.Errorf("%s: %d %s", tt.body, code, b)
		}
		for _, h := range tt.has {
			if !bytes.Contains(b, []byte(h)) {
				t.Errorf("%s: %s lacks %s", tt.body, b, h)
			}
		}
	}
	if _, _, b := post(t, base, "/api/show", `{"model":"tiny:1b"}`); bytes.Contains(b, []byte("num_ctx")) {
		t.Errorf("a model set to no window says one: %s", b)
	}
}

// The Responses API streams typed, numbered events, and ends with
// response.completed holding the whole output and the counts.
func TestResponses(t *testing.T) {
	_, base := listen(t, formatScript)
	code, _, b := post(t, base, "/v1/responses", responsesBody("x", true))
	ev := events(b)
	var text, args, summary strings.Builder
	for i, e := range ev {
		var v struct {
			Type     string
			Sequence int `json:"sequence_number"`
			Delta    string
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		if v.Sequence != i {
			t.Errorf("event %d numbered %d", i, v.Sequence)
		}
		switch v.Type {
		case "response.output_text.delta":
			text.WriteString(v.Delta)
		case "response.function_call_arguments.delta":
			args.WriteString(v.Delta)
		case "response.reasoning_summary_text.delta":
			summary.WriteString(v.Delta)
		}
	}
	var done struct {
		Type     string
		Response struct {
			ID, Status string
			Output     []struct{ Type, Name, Arguments, CallID string }
			Usage      struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
				Details      struct {
					Cached int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			}
		}
	}
	if err := json.Unmarshal([]byte(ev[len(ev)-1]), &done); err != nil {
		t.Fatal(err)
	}
	r := done.Response
	if code != 200 || text.String() != "héllo wörld" || args.String() != `{"k":"v"}` || summary.String() != "hm" ||
		done.Type != "response.completed" || r.Status != "completed" || len(r.Output) != 3 || r.Output[2].Name != "a__b" ||
		r.Usage.InputTokens != 110 || r.Usage.Details.Cached != 100 || r.Usage.OutputTokens != 5 {
		t.Errorf("stream: %+v\n%s", done, b)
	}
	_, _, b = post(t, base, "/openai/v1/responses", responsesBody("x", false))
	if !json.Valid(b) || !bytes.Contains(b, []byte(`"status":"completed"`)) || !bytes.Contains(b, []byte(`"cached_tokens":100`)) {
		t.Errorf("whole:\n%s", b)
	}
	code, _, b = post(t, base, "/v1/responses", responsesBody("huge", true))
	if code != 400 || !bytes.Contains(b, []byte(`"code":"context_length_exceeded"`)) {
		t.Errorf("refusal: %d %s", code, b)
	}
	code, _, b = post(t, base, "/v1/responses", `{"model":"m","input":"busy","stream":true}`)
	if code != 529 || !bytes.Contains(b, []byte(`"message":"Overloaded"`)) {
		t.Errorf("overloaded: %d %s", code, b)
	}
}

// A status with after_chunks starts the answer, then ends the stream with
// the provider's error event.
func TestFailMidStream(t *testing.T) {
	_, base := listen(t, &Script{Rules: []Rule{{Match: "any", Text: "abcdefgh", Chunks: 4, Status: 529, AfterChunks: 2}}})
	for _, tt := range []struct{ path, body, says string }{
		{"/v1/messages", anthropicBody("x", true), `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"/openai/v1/chat/completions", openAIBody("x", true), `data: {"error":{"message":"Overloaded","type":"server_error","code":529}}`},
		{"/ollama/api/chat", ollamaBody("x", ""), `{"error":"Overloaded"}`},
		{"/v1/responses", responsesBody("x", true), `"status":"failed","error":{"code":"server_error","message":"Overloaded"}`},
	} {
		code, _, b := post(t, base, tt.path, tt.body)
		if code != 200 || !bytes.Contains(b, []byte(tt.says)) || !bytes.Contains(b, []byte("cd")) || bytes.Contains(b, []byte("ef")) {
			t.Errorf("%s: %d\n%s", tt.path, code, b)
		}
	}
}

// OpenRouter streams the thinking as reasoning and as pieces of one signed
// reasoning.text detail, the signature last; OpenAI's own path sends none.
func TestOpenRouterReasoning(t *testing.T) {
	_, base := listen(t, formatScript)
	code, _, b := post(t, base, "/openrouter/v1/chat/completions", openAIBody("x", true))
	ev := events(b)
	var reasoning, detail, text strings.Builder
	var sig, format string
	for _, e := range ev[:len(ev)-1] {
		var v struct {
			Choices []struct {
				Delta struct {
					Content          string
					Reasoning        *string
					ReasoningDetails []struct {
						Type, Text, Signature, Format string
						Index                         *int
					} `json:"reasoning_details"`
				}
			}
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		for _, c := range v.Choices {
			if c.Delta.Reasoning != nil {
				reasoning.WriteString(*c.Delta.Reasoning)
			}
			text.WriteString(c.Delta.Content)
			for _, d := range c.Delta.ReasoningDetails {
				if d.Type != "reasoning.text" || d.Index == nil || *d.Index != 0 || sig != "" {
					t.Errorf("a detail %+v in %s", d, e)
				}
				detail.WriteString(d.Text)
				sig, format = d.Signature, d.Format
			}
		}
	}
	if code != 200 || reasoning.String() != "hm" || detail.String() != "hm" || !strings.HasPrefix(sig, "sig_") ||
		format != reasoningFormat || text.String() != "héllo wörld" {
		t.Errorf("stream: reasoning %q, detail %q, signature %q, format %q, text %q\n%s", &reasoning, &detail, sig, format, &text, b)
	}
	if strings.Index(string(b), `"reasoning_details"`) > strings.Index(string(b), `"content":"h`) {
		t.Errorf("the reasoning comes after the text:\n%s", b)
	}
	_, _, b = post(t, base, "/openrouter/v1/chat/completions", openAIBody("x", false))
	if !json.Valid(b) || !bytes.Contains(b, []byte(`"reasoning":"hm","reasoning_details":[{"type":"reasoning.text","text":"hm","signature":"sig_`)) {
		t.Errorf("whole:\n%s", b)
	}
	for _, stream := range []bool{true, false} {
		if _, _, b := post(t, base, "/openai/v1/chat/completions", openAIBody("x", stream)); bytes.Contains(b, []byte("reasoning")) {
			t.Errorf("OpenAI's path sends reasoning (stream %v):\n%s", stream, b)
		}
	}
}

// OpenRouter's usage says what it charged where the rule gives a cost, 0
// too, streamed or whole; OpenAI's and Anthropic's never do, and a cost
// leaves the prompt cache's counts as they would be.
func TestOpenRouterCost(t *testing.T) {
	cost, free := 0.0042, 0.0
	_, base := listen(t, &Script{Cache: true, Rules: []Rule{
		{Match: "free", Usage: Usage{Cost: &free}},
		{Match: "paid", Usage: Usage{Cost: &cost}},
	}})
	usage := func(b []byte, stream bool) string {
		t.Helper()
		if stream {
			ev := events(b)
			b = []byte(ev[len(ev)-2])
		}
		var v struct{ Usage json.RawMessage }
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return string(v.Usage)
	}
	for _, stream := range []bool{true, false} {
		for _, tt := range []struct{ path, text, want string }{
			{"/openrouter/v1/chat/completions", "paid", `,"cost":0.0042,"is_byok":false,"cost_details":{"upstream_inference_cost":0.0042}}`},
			{"/openrouter/v1/chat/completions", "free", `,"cost":0,"is_byok":false,"cost_details":{"upstream_inference_cost":0}}`},
			{"/openrouter/v1/chat/completions", "other", `"prompt_tokens_details":{"cached_tokens":0}}`},
			{"/openai/v1/chat/completions", "paid", `"prompt_tokens_details":{"cached_tokens":0}}`},
		} {
			_, _, b := post(t, base, tt.path, openAIBody(tt.text, stream))
			if u := usage(b, stream); !strings.HasSuffix(u, tt.want) || !json.Valid([]byte(u)) {
				t.Errorf("%s %s (stream %v): usage %s, want it to end %s", tt.path, tt.text, stream, u, tt.want)
			}
		}
		if _, _, b := post(t, base, "/v1/messages", anthropicBody("paid", stream)); bytes.Contains(b, []byte("cost")) {
			t.Errorf("Anthropic's format says a cost (stream %v):\n%s", stream, b)
		}
	}
	long := "paid " + strings.Repeat("the same words again ", 100)
	post(t, base, "/openrouter/v1/chat/completions", openAIBody(long+"one", false))
	_, _, b := post(t, base, "/openrouter/v1/chat/completions", openAIBody(long+"two", false))
	if u := usage(b, false); !strings.Contains(u, `"cost":0.0042`) || strings.Contains(u, `"cached_tokens":0}`) {
		t.Errorf("a rule of a cost alone reads nothing from the prompt cache: %s", u)
	}
}
