package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// AnthropicVersion is the API version sent in the anthropic-version header.
const AnthropicVersion = "2023-06-01"

// Anthropic is a client of Anthropic's Messages API, streamed. Its fields
// are set once before use; it is then safe for concurrent use.
type Anthropic struct {
	Base string       // the API's base URL; requests go to Base + "/v1/messages"
	Key  string       // sent as x-api-key when not empty
	HTTP *http.Client // nil means http.DefaultClient

	to target // made at the first call from Base and Key, which then stay
}

var _ Client = (*Anthropic)(nil)

// Call implements Client.
func (c *Anthropic) Call(ctx context.Context, req *Request, onText func(string)) (*Response, error) {
	d := &anthropicStream{answer: answer{room: newRoom(req)}}
	if err := c.prepare(&d.post, req); err != nil {
		return nil, err
	}
	return d.ask(ctx, func(s *sseReader) error { return d.decode(s, onText) })
}

// prepare makes the call that sends req.
func (c *Anthropic) prepare(p *post, req *Request) error {
	again := func(dst []byte) ([]byte, error) { return appendAnthropicRequest(dst, req) }
	body, err := again(newBody(bodySize(req, FormatAnthropic)))
	if err != nil {
		return err
	}
	u, h, err := c.to.get(func() (string, http.Header) {
		h := jsonHeader("text/event-stream")
		h.Set("Anthropic-Version", AnthropicVersion)
		if c.Key != "" {
			h.Set("X-Api-Key", c.Key)
		}
		return c.Base + "/v1/messages", h
	})
	if err != nil {
		return fmt.Errorf("model: anthropic: %w", err)
	}
	*p = post{provider: "anthropic", hc: httpClient(c.HTTP), url: u, body: body, again: again, header: h, stall: req.Stall, timeout: req.Timeout}
	return nil
}

// cacheControl marks a prompt cache breakpoint: the provider keeps the
// prompt up to and including the block it is on.
const cacheControl = `,"cache_control":{"type":"ephemeral"}`

// appendAnthropicRequest appends req as a Messages API request body, its
// keys in a fixed order so the same request is the same bytes. Cache
// breakpoints are set where the prompt changes least: after the tools and
// the system prompt's stable part (SystemStable), which come first in the
// prompt, after the whole system prompt (or the tools, without one), and on
// the last user message's last block, so the next turn reads all of this
// one from the cache (or on the one CacheThrough names). That is three of
// the four Anthropic allows.
func appendAnthropicRequest(dst []byte, req *Request) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	dst = append(dst, `{"model":`...)
	dst = event.AppendString(dst, req.Model)
	dst = append(dst, `,"max_tokens":`...)
	dst = strconv.AppendInt(dst, int64(maxTokens), 10)
	dst = append(dst, `,"stream":true`...)
	if req.System != "" {
		dst = append(dst, `,"system":[{"type":"text","text":`...)
		if k := req.SystemStable; k > 0 && k < len(req.System) {
			if rest := strings.TrimLeft(req.System[k:], "\n"); rest != "" {
				dst = event.AppendString(dst, req.System[:k])
				dst = append(dst, cacheControl...)
				dst = append(dst, `},{"type":"text","text":`...)
				dst = event.AppendString(dst, rest)
			} else {
				dst = event.AppendString(dst, req.System)
			}
		} else {
			dst = event.AppendString(dst, req.System)
		}
		dst = append(dst, cacheControl...)
		dst = append(dst, `}]`...)
	}
	if len(req.Tools) > 0 {
		// Without a system prompt the tools' end is the prompt's first
		// breakpoint.
		dst = appendTools(dst, req.Tools, `{"name":`, `,"input_schema":`, `}`, req.System == "")
	}
	dst = append(dst, `,"messages":[`...)
	mark := len(req.Messages) - 1 // the message whose last block holds the breakpoint
	if k := req.CacheThrough; k > 0 && k < len(req.Messages) {
		mark = k - 1
	}
	first := 0
	if p := kept(req, FormatAnthropic); p != nil {
		at := mark
		if at < len(req.Messages) && req.Messages[at].Role != "user" {
			at = -1 // only a user's block is marked
		}
		dst, first = p.appendTo(dst, false, at), p.n
	}
	for i := first; i < len(req.Messages); i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendAnthropicMessage(dst, &req.Messages[i], i == mark); err != nil {
			return nil, messageError(FormatAnthropic, i, err)
		}
	}
	return append(dst, `]}`...), nil
}

// appendAnthropicMessage appends m, a cache breakpoint on its last block
// when breakpoint is set and it is a user's.
func appendAnthropicMessage(dst []byte, m *Message, breakpoint bool) ([]byte, error) {
	switch m.Role {
	case "user":
		return appendAnthropicUser(dst, m, breakpoint), nil
	case "assistant":
		return appendAnthropicAssistant(dst, m)
	}
	return nil, roleError(m.Role)
}

func appendAnthropicUser(dst []byte, m *Message, breakpoint bool) []byte {
	dst = append(dst, `{"role":"user","content":[`...)
	for i := range m.Results {
		r := &m.Results[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"tool_result","tool_use_id":`...)
		dst = event.AppendString(dst, r.CallID)
		if r.Text != "" {
			dst = append(dst, `,"content":`...)
			dst = event.AppendString(dst, r.Text)
		}
		if r.IsError {
			dst = append(dst, `,"is_error":true`...)
		}
		if breakpoint && i == len(m.Results)-1 && m.Text == "" {
			dst = append(dst, cacheControl...)
		}
		dst = append(dst, '}')
	}
	if m.Text != "" || len(m.Results) == 0 {
		if len(m.Results) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = event.AppendString(dst, m.Text)
		if breakpoint {
			dst = append(dst, cacheControl...)
		}
		dst = append(dst, '}')
	}
	return append(dst, `]}`...)
}

func appendAnthropicAssistant(dst []byte, m *Message) ([]byte, error) {
	dst = append(dst, `{"role":"assistant","content":[`...)
	n := 0
	if len(m.Thinking) > 0 {
		var err error
		dst, n, err = appendThinking(dst, m.Thinking)
		if err != nil {
			return nil, err
		}
	}
	if m.Text != "" || (n == 0 && len(m.Calls) == 0) {
		dst, n = appendStringObject(dst, n, `{"type":"text","text":`, m.Text)
	}
	for i := range m.Calls {
		c := &m.Calls[i]
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = event.AppendString(dst, c.ID)
		dst = append(dst, `,"name":`...)
		dst = event.AppendString(dst, c.Name)
		dst = append(dst, `,"input":`...)
		dst = appendArgs(dst, c.Args)
		dst = append(dst, '}')
		n++
	}
	return append(dst, `]}`...), nil
}

// appendThinking appends the thinking blocks kept in an answer, as content
// blocks, and returns how many it appended.
func appendThinking(dst []byte, thinking []byte) ([]byte, int, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(thinking)
	if err != nil {
		return nil, 0, fmt.Errorf("thinking is not JSON: %v", err)
	}
	blocks, err := v.Array()
	if err != nil {
		return nil, 0, errors.New("thinking is not a JSON array")
	}
	n := 0
	for _, b := range blocks {
		data := b.Get("data")
		if data == nil && len(b.GetStringBytes("signature")) == 0 {
			continue // another provider's thinking, which Anthropic cannot check
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		if data != nil {
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = event.AppendString(dst, string(data.GetStringBytes()))
		} else {
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = event.AppendString(dst, string(b.GetStringBytes("thinking")))
			dst = append(dst, `,"signature":`...)
			dst = event.AppendString(dst, string(b.GetStringBytes("signature")))
		}
		dst = append(dst, '}')
	}
	return dst, n, nil
}

// maxBlocks is the most content blocks (or, for OpenAI, tool calls) an
// answer may have; an index past it is malformed.
const maxBlocks = 1024

// anthropicStream decodes a Messages API event stream into a Response. It
// is used for one stream, with one parser for all its events.
type anthropicStream struct {
	answer
	blocks []anthropicBlock
}

// anthropicBlock is a content block being streamed.
type anthropicBlock struct {
	kind string // text, thinking, redacted_thinking, tool_use; others are skipped
	id   string
	name string
	buf  []byte // a thinking block's text, a redacted block's data, a call's arguments
	sig  []byte
}

// decode reads events until message_stop.
func (d *anthropicStream) decode(s *sseReader, onText func(string)) error {
	return d.decodeEach("an event", s.next, func(v *fastjson.Value) (bool, error) { return d.event(v, onText) })
}

// event takes in one event; it returns true on message_stop.
func (d *anthropicStream) event(v *fastjson.Value, onText func(string)) (bool, error) {
	switch string(v.GetStringBytes("type")) {
	case "message_start":
		m := v.Get("message")
		d.resp.ResponseID = string(m.GetStringBytes("id"))
		d.resp.Model = string(m.GetStringBytes("model"))
		anthropicUsage(&d.resp.Usage, m.Get("usage"))
	case "content_block_start":
		b, err := d.block(v, true)
		if err != nil {
			return false, err
		}
		cb := v.Get("content_block")
		b.kind = string(cb.GetStringBytes("type"))
		if err := d.room.take(len(cb.GetStringBytes("text")) + len(cb.GetStringBytes("thinking")) +
			len(cb.GetStringBytes("signature")) + len(cb.GetStringBytes("data"))); err != nil {
			return false, err
		}
		switch b.kind {
		case "text":
			d.appendText(cb.GetStringBytes("text"), onText)
		case "thinking":
			b.buf = append(b.buf, cb.GetStringBytes("thinking")...)
			b.sig = append(b.sig, cb.GetStringBytes("signature")...)
		case "redacted_thinking":
			b.buf = append(b.buf, cb.GetStringBytes("data")...)
		case "tool_use":
			b.id = string(cb.GetStringBytes("id"))
			b.name = string(cb.GetStringBytes("name"))
		}
	case "content_block_delta":
		b, err := d.block(v, false)
		if err != nil {
			return false, err
		}
		delta := v.Get("delta")
		if err := d.room.take(len(delta.GetStringBytes("text")) + len(delta.GetStringBytes("thinking")) +
			len(delta.GetStringBytes("signature")) + len(delta.GetStringBytes("partial_json"))); err != nil {
			return false, err
		}
		switch string(delta.GetStringBytes("type")) {
		case "text_delta":
			d.appendText(delta.GetStringBytes("text"), onText)
		case "thinking_delta":
			b.buf = append(b.buf, delta.GetStringBytes("thinking")...)
		case "signature_delta":
			b.sig = append(b.sig, delta.GetStringBytes("signature")...)
		case "input_json_delta":
			if len(b.buf)+len(delta.GetStringBytes("partial_json")) > maxLine {
				return false, fmt.Errorf("%w: call %s: arguments over %d bytes", ErrMalformed, b.id, maxLine)
			}
			b.buf = append(b.buf, delta.GetStringBytes("partial_json")...)
		}
	case "content_block_stop":
		b, err := d.block(v, false)
		if err != nil {
			return false, err
		}
		return false, d.finish(b)
	case "message_delta":
		if r := v.GetStringBytes("delta", "stop_reason"); r != nil {
			d.resp.StopReason = string(r)
		}
		anthropicUsage(&d.resp.Usage, v.Get("usage"))
	case "message_stop":
		return true, nil
	case "error":
		e := &StatusError{
			Provider: "anthropic",
			Type:     string(v.GetStringBytes("error", "type")),
			Message:  string(v.GetStringBytes("error", "message")),
		}
		e.Code = anthropicErrorCodes[e.Type]
		return false, e
	}
	return false, nil
}

// block returns the block an event names by its index: a new one on
// content_block_start.
func (d *anthropicStream) block(v *fastjson.Value, start bool) (*anthropicBlock, error) {
	i := v.GetInt("index")
	if i < 0 || i >= maxBlocks {
		return nil, fmt.Errorf("%w: block index %d", ErrMalformed, i)
	}
	if start {
		for len(d.blocks) <= i {
			d.blocks = append(d.blocks, anthropicBlock{})
		}
		d.blocks[i] = anthropicBlock{}
	} else if i >= len(d.blocks) {
		return nil, fmt.Errorf("%w: block %d was not started", ErrMalformed, i)
	}
	return &d.blocks[i], nil
}

// finish keeps a block that ended: a thinking block joins the answer's
// thinking, a tool_use block its calls.
func (d *anthropicStream) finish(b *anthropicBlock) error {
	switch b.kind {
	case "thinking", "redacted_thinking":
		if len(d.resp.Thinking) == 0 {
			d.resp.Thinking = append(d.resp.Thinking, '[')
		} else {
			d.resp.Thinking[len(d.resp.Thinking)-1] = ','
		}
		if b.kind == "thinking" {
			d.resp.Thinking = append(d.resp.Thinking, `{"thinking":`...)
			d.resp.Thinking = event.AppendString(d.resp.Thinking, string(b.buf))
			d.resp.Thinking = append(d.resp.Thinking, `,"signature":`...)
			d.resp.Thinking = event.AppendString(d.resp.Thinking, string(b.sig))
		} else {
			d.resp.Thinking = append(d.resp.Thinking, `{"data":`...)
			d.resp.Thinking = event.AppendString(d.resp.Thinking, string(b.buf))
		}
		d.resp.Thinking = append(d.resp.Thinking, "}]"...)
	case "tool_use":
		args, err := callArgs(b.buf)
		if err != nil {
			return fmt.Errorf("%w: call %s (%s): %v", ErrMalformed, b.id, b.name, err)
		}
		d.resp.Calls = append(d.resp.Calls, event.Call{ID: b.id, Name: b.name, Args: args})
	}
	*b = anthropicBlock{}
	return nil
}

// anthropicUsage reads a usage object; a field it has replaces the one
// before, since message_delta's counts are cumulative.
func anthropicUsage(u *event.Usage, v *fastjson.Value) {
	if v == nil {
		return
	}
	setCount(&u.Input, v.Get("input_tokens"))
	setCount(&u.Output, v.Get("output_tokens"))
	setCount(&u.CacheRead, v.Get("cache_read_input_tokens"))
	setCount(&u.CacheWrite, v.Get("cache_creation_input_tokens"))
}

// setCount sets *n to v when v is a number.
func setCount(n *int64, v *fastjson.Value) {
	if v != nil && v.Type() == fastjson.TypeNumber {
		*n = v.GetInt64()
	}
}

// callArgs checks a call's streamed arguments are one JSON object and
// returns them; none at all is {}.
func callArgs(b []byte) ([]byte, error) {
	b = trimSpace(b)
	if len(b) == 0 {
		return []byte("{}"), nil
	}
	if b[0] != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	if err := fastjson.ValidateBytes(b); err != nil {
		return nil, fmt.Errorf("arguments are not JSON: %v", err)
	}
	return b, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
