package scripted

import (
	"errors"
	"strings"

	"github.com/valyala/fastjson"
)

// request is what the scripted model reads of a request.
type request struct {
	format  format
	model   string
	stream  bool
	usage   bool   // OpenAI: stream_options.include_usage
	text    string // the last user text
	results bool   // the last message carries tool results
	rounds  int    // the rounds of tool results since the last user text
	size    int    // the body's bytes
	key     string // the conversation a prompt cache keeps it under: prompt_cache_key, else the model
}

// format is a provider's wire format, with the provider named in errors.
type format int

const (
	anthropic format = iota
	openAI
	openRouter
	ollama    // Ollama's /api/chat: NDJSON, streamed unless told not to
	responses // OpenAI's Responses API
)

// parseRequest reads body in f's format.
func parseRequest(p *fastjson.Parser, f format, body []byte) (*request, error) {
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, errors.New("the body is not JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return nil, errors.New("the body is not a JSON object")
	}
	r := &request{
		format: f,
		model:  string(v.GetStringBytes("model")),
		stream: v.GetBool("stream"),
		usage:  v.GetBool("stream_options", "include_usage"),
		size:   len(body),
	}
	r.key = string(v.GetStringBytes("prompt_cache_key"))
	if r.key == "" {
		r.key = "model " + r.model
	}
	if f == ollama && v.Get("stream") == nil {
		r.stream = true // Ollama streams unless told not to
	}
	if f == responses {
		if in := v.GetStringBytes("input"); len(in) > 0 {
			r.text = string(in)
			return r, nil
		}
		items := v.GetArray("input")
		if len(items) == 0 {
			return nil, errors.New("input: none")
		}
		r.text, r.results, r.rounds = responsesLast(items)
		return r, nil
	}
	msgs := v.GetArray("messages")
	if len(msgs) == 0 {
		return nil, errors.New("messages: none")
	}
	if f == anthropic {
		r.text, r.results, r.rounds = anthropicLast(msgs)
	} else {
		r.text, r.results, r.rounds = openAILast(msgs)
	}
	return r, nil
}

// responsesLast finds, in a Responses API input, the last user text,
// whether the last item is a tool's output, and the rounds of outputs
// after the text: runs of function_call_output items.
func responsesLast(items []*fastjson.Value) (string, bool, int) {
	typ := func(i int) string { return string(items[i].GetStringBytes("type")) }
	results := typ(len(items)-1) == "function_call_output"
	for i := len(items) - 1; i >= 0; i-- {
		if t := responsesText(items[i]); t != "" {
			rounds := 0
			for j := i + 1; j < len(items); j++ {
				if typ(j) == "function_call_output" && (j+1 == len(items) || typ(j+1) != "function_call_output") {
					rounds++
				}
			}
			return t, results, rounds
		}
	}
	return "", results, 0
}

// responsesText is a Responses API item's text when it is the user's: its
// content as a string, or its input_text parts joined.
func responsesText(it *fastjson.Value) string {
	if string(it.GetStringBytes("role")) != "user" {
		return ""
	}
	if t := it.GetStringBytes("content"); len(t) > 0 {
		return string(t)
	}
	return joinText(it.GetArray("content"), "input_text")
}

// anthropicLast finds the last user text, whether the last message
// carries tool results, and the rounds since the text.
func anthropicLast(msgs []*fastjson.Value) (string, bool, int) {
	results := false
	for _, b := range msgs[len(msgs)-1].GetArray("content") {
		if string(b.GetStringBytes("type")) == "tool_result" {
			results = true
		}
	}
	text, rounds := lastUserText(msgs)
	return text, results, rounds
}

// openAILast finds the last user text, whether the last message is a tool
// result, and the rounds since the text: Chat Completions' format, and
// Ollama's, which is like it.
func openAILast(msgs []*fastjson.Value) (string, bool, int) {
	results := string(msgs[len(msgs)-1].GetStringBytes("role")) == "tool"
	text, rounds := lastUserText(msgs)
	return text, results, rounds
}

// lastUserText is the text of the last user message that has one (its
// content as a string, or its content array's text parts joined), and the
// rounds of tool calls since it: the assistant's messages after it, each
// one round's calls.
func lastUserText(msgs []*fastjson.Value) (string, int) {
	rounds := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if string(m.GetStringBytes("role")) != "user" {
			if string(m.GetStringBytes("role")) == "assistant" {
				rounds++
			}
			continue
		}
		if t := m.GetStringBytes("content"); len(t) > 0 {
			return string(t), rounds
		}
		if t := joinText(m.GetArray("content"), "text"); t != "" {
			return t, rounds
		}
	}
	return "", 0
}

// joinText joins the parts of a content array whose type is typ: "text"
// in the Messages API and Chat Completions, "input_text" in the Responses
// API.
func joinText(parts []*fastjson.Value, typ string) string {
	var b strings.Builder
	for _, p := range parts {
		if string(p.GetStringBytes("type")) != typ {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.Write(p.GetStringBytes("text"))
	}
	return b.String()
}
