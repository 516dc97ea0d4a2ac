package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// OpenAI is a client of the Chat Completions API, streamed: OpenAI's, and
// OpenRouter's or a runtime's, which speak it too. Its fields are set once
// before use; it is then safe for concurrent use.
type OpenAI struct {
	Provider string       // named in errors; "openrouter" also sends max_tokens, which it reads, for max_completion_tokens, and keeps and sends back reasoning
	Base     string       // the API's base URL; requests go to Base + "/v1/chat/completions"
	Key      string       // sent as a bearer token when not empty
	HTTP     *http.Client // nil means http.DefaultClient

	to target // made at the first call from Base and Key, which then stay
}

var _ Client = (*OpenAI)(nil)

// Call implements Client.
func (c *OpenAI) Call(ctx context.Context, req *Request, onText func(string)) (*Response, error) {
	provider := c.Provider
	if provider == "" {
		provider = "openai"
	}
	d := &openAIStream{provider: provider, answer: answer{room: newRoom(req)}}
	if err := c.prepare(&d.post, provider, req); err != nil {
		return nil, err
	}
	return d.ask(ctx, func(s *sseReader) error { return d.decode(s, onText) })
}

// prepare makes the call that sends req to provider.
func (c *OpenAI) prepare(p *post, provider string, req *Request) error {
	again := func(dst []byte) ([]byte, error) { return appendOpenAIRequest(dst, req, provider == "openrouter") }
	body, err := again(newBody(bodySize(req, provider)))
	if err != nil {
		return err
	}
	u, h, err := c.to.get(func() (string, http.Header) {
		return c.Base + "/v1/chat/completions", bearerHeader("text/event-stream", c.Key)
	})
	if err != nil {
		return fmt.Errorf("model: %s: %w", provider, err)
	}
	*p = post{provider: provider, hc: httpClient(c.HTTP), url: u, body: body, again: again, header: h, stall: req.Stall, timeout: req.Timeout}
	return nil
}

// appendOpenAIRequest appends req as a Chat Completions request body, its
// keys in a fixed order so the same request is the same bytes, the
// conversation's prompt_cache_key before the messages. The answer's
// limit is max_completion_tokens, OpenAI's name, or, for OpenRouter,
// max_tokens, the name it reads; OpenRouter is also sent back its
// reasoning_details.
func appendOpenAIRequest(dst []byte, req *Request, openRouter bool) ([]byte, error) {
	format := FormatOpenAI
	if openRouter {
		format = FormatOpenRouter
	}
	dst = append(dst, `{"model":`...)
	dst = event.AppendString(dst, req.Model)
	if req.MaxTokens > 0 {
		if openRouter {
			dst = append(dst, `,"max_tokens":`...)
		} else {
			dst = append(dst, `,"max_completion_tokens":`...)
		}
		dst = strconv.AppendInt(dst, int64(req.MaxTokens), 10)
	}
	dst = append(dst, `,"stream":true,"stream_options":{"include_usage":true}`...)
	if req.CacheKey != "" {
		dst = append(dst, `,"prompt_cache_key":`...)
		dst = event.AppendString(dst, req.CacheKey)
	}
	return appendChatMessages(dst, req, format)
}

// appendOpenAIUser appends a user message: a tool message for each result,
// then the text, if any. n counts the messages so far.
func appendOpenAIUser(dst []byte, m *Message, n int) ([]byte, int) {
	return appendToolUser(dst, m, n, `{"role":"tool","tool_call_id":`, func(r *Result) string { return r.CallID })
}

// appendOpenAIAssistant appends an assistant message: its text, its calls
// and, for OpenRouter, the reasoning_details kept in its thinking. n counts
// the messages so far.
func appendOpenAIAssistant(dst []byte, m *Message, n int, openRouter bool) ([]byte, int, error) {
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"role":"assistant","content":`...)
	if m.Text == "" && len(m.Calls) > 0 {
		dst = append(dst, "null"...)
	} else {
		dst = event.AppendString(dst, m.Text)
	}
	dst = appendToolCalls(dst, m.Calls, appendOpenAICall)
	if openRouter && len(m.Thinking) > 0 {
		var err error
		if dst, err = appendReasoningDetails(dst, m.Thinking); err != nil {
			return nil, 0, err
		}
	}
	return append(dst, '}'), n + 1, nil
}

// appendOpenAICall appends a call, its arguments as a string of JSON.
func appendOpenAICall(dst []byte, c *event.Call) []byte {
	dst = append(dst, `{"id":`...)
	dst = event.AppendString(dst, c.ID)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = event.AppendString(dst, c.Name)
	dst = append(dst, `,"arguments":`...)
	if len(c.Args) == 0 {
		dst = append(dst, `"{}"`...)
	} else {
		dst = event.AppendString(dst, string(c.Args))
	}
	return append(dst, `}}`...)
}

// openAIStream decodes a Chat Completions chunk stream into a Response. It
// is used for one stream, with one parser for all its chunks. From
// OpenRouter it also keeps the reasoning.
type openAIStream struct {
	answer
	provider string
	calls    []openAICall

	details       []reasoningDetail // OpenRouter's reasoning_details, by index
	reasoningText []byte            // OpenRouter's reasoning, while no detail has come
}

// openAICall is a tool call being streamed.
type openAICall struct {
	id, name string
	args     []byte
}

// decode reads chunks until [DONE].
func (d *openAIStream) decode(s *sseReader, onText func(string)) error {
	next := func() ([]byte, error) {
		data, err := s.next()
		if err == nil && string(data) == "[DONE]" {
			return nil, errDone
		}
		return data, err
	}
	err := d.decodeEach("a chunk", next, func(v *fastjson.Value) (bool, error) { return false, d.chunk(v, onText) })
	if err == errDone {
		return d.finish()
	}
	return err
}

// errDone is what a chunk stream's next says at [DONE], the end it marks
// outside JSON; decode never returns it.
var errDone = errors.New("model: [DONE]")

// chunk takes in one chunk.
func (d *openAIStream) chunk(v *fastjson.Value, onText func(string)) error {
	if ev := v.Get("error"); ev != nil {
		e := &StatusError{Provider: d.provider}
		errorFields(e, v)
		if c := ev.Get("code"); c != nil && c.Type() == fastjson.TypeNumber {
			e.Code = c.GetInt()
		}
		return e
	}
	if d.resp.ResponseID == "" {
		d.resp.ResponseID = string(v.GetStringBytes("id"))
	}
	if d.resp.Model == "" {
		d.resp.Model = string(v.GetStringBytes("model"))
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		// prompt_tokens counts the cached tokens too; Input leaves them out.
		prompt := u.GetInt64("prompt_tokens")
		cached := u.GetInt64("prompt_tokens_details", "cached_tokens")
		d.resp.Usage = event.Usage{Input: prompt - cached, Output: u.GetInt64("completion_tokens"), CacheRead: cached}
		if d.provider == "openrouter" {
			d.resp.Cost = openRouterCost(u)
		}
	}
	for _, c := range v.GetArray("choices") {
		if c.GetInt("index") != 0 {
			continue
		}
		if r := c.GetStringBytes("finish_reason"); r != nil {
			d.resp.StopReason = string(r)
		}
		delta := c.Get("delta")
		if delta == nil {
			continue
		}
		if t := delta.GetStringBytes("content"); len(t) > 0 {
			if err := d.room.take(len(t)); err != nil {
				return err
			}
			d.appendText(t, onText)
		}
		for _, tc := range delta.GetArray("tool_calls") {
			if err := d.callDelta(tc); err != nil {
				return err
			}
		}
		if d.provider == "openrouter" {
			if err := d.reasoning(delta); err != nil {
				return err
			}
		}
	}
	return nil
}

// openRouterCost is what OpenRouter's usage object u says the call cost
// (its usage accounting, in every answer's last chunk whether asked for or
// not: its usage.include parameter is no longer read, so it is not sent).
// cost is what it charged the account, in credits of one US dollar; a call made with the account's own key for the
// provider (is_byok) was charged that provider's price there as well,
// cost_details.upstream_inference_cost, which is added to it. The
// upstream cost of any other call is the part of cost that went to the
// provider, not a second charge. A usage without a cost, or with one that
// is no amount (not a number, below 0), reports none: the call is priced.
func openRouterCost(u *fastjson.Value) Cost {
	c := u.Get("cost")
	if c == nil || c.Type() != fastjson.TypeNumber {
		return Cost{}
	}
	usd := c.GetFloat64()
	if u.GetBool("is_byok") {
		usd += u.GetFloat64("cost_details", "upstream_inference_cost")
	}
	if !(usd >= 0) || math.IsInf(usd, 0) {
		return Cost{}
	}
	return Cost{USD: usd, Reported: true}
}

// callDelta adds a fragment of a tool call: the first names it, the rest
// carry pieces of its arguments.
func (d *openAIStream) callDelta(tc *fastjson.Value) error {
	i := len(d.calls) - 1
	if ix := tc.Get("index"); ix != nil {
		i = ix.GetInt()
	} else if tc.Get("id") != nil {
		i = len(d.calls) // a runtime that leaves out the index starts a call with its id
	}
	if i < 0 || i >= maxBlocks {
		return fmt.Errorf("%w: tool call index %d", ErrMalformed, i)
	}
	for len(d.calls) <= i {
		d.calls = append(d.calls, openAICall{})
	}
	c := &d.calls[i]
	if id := tc.GetStringBytes("id"); len(id) > 0 {
		c.id = string(id)
	}
	if name := tc.GetStringBytes("function", "name"); len(name) > 0 && c.name == "" {
		c.name = string(name)
	}
	frag := tc.GetStringBytes("function", "arguments")
	if err := d.room.take(len(frag)); err != nil {
		return err
	}
	if len(c.args)+len(frag) > maxLine {
		return fmt.Errorf("%w: call %s: arguments over %d bytes", ErrMalformed, c.id, maxLine)
	}
	c.args = append(c.args, frag...)
	return nil
}

// finish turns the calls and the reasoning streamed into the answer's.
func (d *openAIStream) finish() error {
	if len(d.details) > 0 || len(d.reasoningText) > 0 {
		t := make([]byte, 0, thinkingSize(d.details, d.reasoningText))
		if t = appendReasoningThinking(t, d.details, d.reasoningText); len(t) > 0 {
			d.resp.Thinking = t
		}
	}
	for i := range d.calls {
		c := &d.calls[i]
		if c.id == "" && c.name == "" && len(c.args) == 0 {
			continue // an index skipped
		}
		args, err := callArgs(c.args)
		if err != nil {
			return fmt.Errorf("%w: call %s (%s): %v", ErrMalformed, c.id, c.name, err)
		}
		d.resp.Calls = append(d.resp.Calls, event.Call{ID: c.id, Name: c.name, Args: args})
	}
	return nil
}
