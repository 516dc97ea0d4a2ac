package scripted

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"lnk.dev/linkharness/store/event"
)

func quote(s string) []byte { return event.AppendString(nil, s) }

// stream writes one streamed answer, a piece at a time, stopping where the
// rule cuts or stalls it.
type stream struct {
	w       http.ResponseWriter
	f       format
	flusher http.Flusher
	ctx     context.Context
	srv     *Server
	a       *answer
	buf     []byte
	sent    int // pieces sent
	seq     int // the Responses API's sequence_number of the next event
}

// flush writes what buf holds and pushes it to the client: at once, or a
// byte at a time when the rule trickles.
func (st *stream) flush() {
	if r := st.a.rule; r != nil && r.TrickleMS > 0 {
		st.trickle(time.Duration(r.TrickleMS) * time.Millisecond)
		return
	}
	_, _ = st.w.Write(st.buf)
	st.buf = st.buf[:0]
	if st.flusher != nil {
		st.flusher.Flush()
	}
}

// trickle writes what buf holds a byte at a time, every apart, until the
// client goes or the server stops.
func (st *stream) trickle(apart time.Duration) {
	b := st.buf
	st.buf = st.buf[:0]
	for i := range b {
		if i > 0 && !st.srv.wait(st.ctx, apart) {
			return
		}
		_, _ = st.w.Write(b[i : i+1])
		if st.flusher != nil {
			st.flusher.Flush()
		}
	}
}

// ping holds a stall with a keep-alive every apart, until the client goes
// or the server stops.
func (st *stream) ping(apart time.Duration) {
	for st.srv.wait(st.ctx, apart) {
		switch st.f {
		case anthropic:
			st.buf = append(st.buf, ": keep-alive\n\n"...)
			st.event("ping")
			st.buf = append(st.buf, `{"type":"ping"}`+"\n\n"...)
		case ollama:
			st.buf = append(st.buf, '\n')
		default:
			st.buf = append(st.buf, ": keep-alive\n\n"...)
		}
		st.flush()
	}
}

// piece says whether the next piece of the answer is to be sent: not once
// a cut or a stall is due (the stall is held here), nor when the client is
// gone. It waits the pause between pieces.
func (st *stream) piece() bool {
	if r := st.a.rule; r != nil && (r.Cut || r.Stall || r.Status != 0) && st.sent >= r.AfterChunks {
		if r.Status != 0 {
			st.failure(r.Status)
		}
		st.flush()
		switch {
		case r.Stall && r.PingMS > 0:
			st.ping(time.Duration(r.PingMS) * time.Millisecond)
		case r.Stall:
			st.srv.hold(st.ctx)
		}
		return false
	}
	if st.sent > 0 && st.a.pause > 0 {
		st.flush()
		if !st.srv.wait(st.ctx, st.a.pause) {
			return false
		}
	}
	st.sent++
	return st.ctx.Err() == nil
}

// failure ends a stream mid-answer with an error, as each provider sends
// one once the headers are gone: the status's words, and for 529
// Anthropic's overloaded_error.
func (st *stream) failure(code int) {
	msg := http.StatusText(code)
	if code == 529 {
		msg = "Overloaded"
	}
	switch st.f {
	case anthropic:
		st.event("error")
		st.buf = append(st.buf, `{"type":"error","error":{"type":"`...)
		st.buf = append(st.buf, anthropicType(code)...)
		st.buf = append(st.buf, `","message":`...)
		st.buf = event.AppendString(st.buf, msg)
		st.buf = append(st.buf, "}}\n\n"...)
	case ollama:
		st.buf = append(st.buf, `{"error":`...)
		st.buf = event.AppendString(st.buf, msg)
		st.buf = append(st.buf, "}\n"...)
	case responses:
		st.rEvent("response.failed")
		st.buf = append(st.buf, `,"response":{"id":"resp_`...)
		st.buf = append(st.buf, st.a.id...)
		st.buf = append(st.buf, `","object":"response","status":"failed","error":{"code":"`...)
		st.buf = append(st.buf, openAIType(code)...)
		st.buf = append(st.buf, `","message":`...)
		st.buf = event.AppendString(st.buf, msg)
		st.buf = append(st.buf, "}}}\n\n"...)
	default:
		st.buf = append(st.buf, `data: {"error":{"message":`...)
		st.buf = event.AppendString(st.buf, msg)
		st.buf = append(st.buf, `,"type":"`...)
		st.buf = append(st.buf, openAIType(code)...)
		st.buf = append(st.buf, `","code":`...)
		st.buf = strconv.AppendInt(st.buf, int64(code), 10)
		st.buf = append(st.buf, "}}\n\n"...)
	}
}

// anthropic streams the answer as Messages API events.
func (st *stream) anthropic(req *request) {
	a := st.a
	st.event("message_start")
	st.buf = append(st.buf, `{"type":"message_start","message":{"id":"msg_`...)
	st.buf = append(st.buf, a.id...)
	st.buf = append(st.buf, `","type":"message","role":"assistant","model":`...)
	st.buf = event.AppendString(st.buf, req.model)
	st.buf = append(st.buf, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	st.buf = appendAnthropicUsage(st.buf, a.usage, 1)
	st.buf = append(st.buf, "}}\n\n"...)
	st.flush()

	index := 0
	if a.thinking != "" {
		st.blockStart(index, `{"type":"thinking","thinking":"","signature":""}`)
		if !st.deltas(index, "thinking_delta", "thinking", a.thinking) {
			return
		}
		st.delta(index, "signature_delta", "signature", "sig_"+a.id)
		st.blockStop(index)
		index++
	}
	if a.text != "" {
		st.blockStart(index, `{"type":"text","text":""}`)
		if !st.deltas(index, "text_delta", "text", a.text) {
			return
		}
		st.blockStop(index)
		index++
	}
	for _, c := range a.calls {
		st.event("content_block_start")
		st.buf = append(st.buf, `{"type":"content_block_start","index":`...)
		st.buf = strconv.AppendInt(st.buf, int64(index), 10)
		st.buf = append(st.buf, `,"content_block":{"type":"tool_use","id":"toolu_`...)
		st.buf = append(st.buf, c.id...)
		st.buf = append(st.buf, `","name":`...)
		st.buf = event.AppendString(st.buf, c.name)
		st.buf = append(st.buf, `,"input":{}}}`+"\n\n"...)
		if !st.deltas(index, "input_json_delta", "partial_json", c.args) {
			return
		}
		st.blockStop(index)
		index++
	}
	if !st.piece() {
		return
	}
	st.event("message_delta")
	st.buf = append(st.buf, `{"type":"message_delta","delta":{"stop_reason":"`...)
	st.buf = append(st.buf, stopReason(a, "end_turn", "tool_use")...)
	st.buf = append(st.buf, `","stop_sequence":null},"usage":{"output_tokens":`...)
	st.buf = strconv.AppendInt(st.buf, a.usage.Output, 10)
	st.buf = append(st.buf, "}}\n\n"...)
	st.event("message_stop")
	st.buf = append(st.buf, `{"type":"message_stop"}`+"\n\n"...)
	st.flush()
}

func (st *stream) event(name string) {
	st.buf = append(st.buf, "event: "...)
	st.buf = append(st.buf, name...)
	st.buf = append(st.buf, "\ndata: "...)
}

func (st *stream) blockStart(index int, block string) {
	st.event("content_block_start")
	st.buf = append(st.buf, `{"type":"content_block_start","index":`...)
	st.buf = strconv.AppendInt(st.buf, int64(index), 10)
	st.buf = append(st.buf, `,"content_block":`...)
	st.buf = append(st.buf, block...)
	st.buf = append(st.buf, "}\n\n"...)
}

func (st *stream) delta(index int, typ, key, s string) {
	st.event("content_block_delta")
	st.buf = append(st.buf, `{"type":"content_block_delta","index":`...)
	st.buf = strconv.AppendInt(st.buf, int64(index), 10)
	st.buf = append(st.buf, `,"delta":{"type":"`...)
	st.buf = append(st.buf, typ...)
	st.buf = append(st.buf, `","`...)
	st.buf = append(st.buf, key...)
	st.buf = append(st.buf, `":`...)
	st.buf = event.AppendString(st.buf, s)
	st.buf = append(st.buf, "}}\n\n"...)
	st.flush()
}

// deltas streams s as the deltas of block index, a piece each, and says
// whether the stream goes on: false once a cut, a stall or the client
// ended it.
func (st *stream) deltas(index int, typ, key, s string) bool {
	for _, p := range pieces(s, st.a.chunks) {
		if !st.piece() {
			return false
		}
		st.delta(index, typ, key, p)
	}
	return true
}

func (st *stream) blockStop(index int) {
	st.event("content_block_stop")
	st.buf = append(st.buf, `{"type":"content_block_stop","index":`...)
	st.buf = strconv.AppendInt(st.buf, int64(index), 10)
	st.buf = append(st.buf, "}\n\n"...)
}

// openAI streams the answer as Chat Completions chunks.
func (st *stream) openAI(req *request) {
	a := st.a
	st.chunkStart(req)
	st.buf = append(st.buf, `{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
	st.flush()
	if st.f == openRouter && a.thinking != "" {
		for _, p := range pieces(a.thinking, a.chunks) {
			if !st.piece() {
				return
			}
			st.reasoning(req, p, "")
		}
		st.reasoning(req, "", "sig_"+a.id)
	}
	for _, p := range pieces(a.text, a.chunks) {
		if p == "" {
			break
		}
		if !st.piece() {
			return
		}
		st.chunkStart(req)
		st.buf = append(st.buf, `{"content":`...)
		st.buf = event.AppendString(st.buf, p)
		st.buf = append(st.buf, `},"finish_reason":null}]}`+"\n\n"...)
		st.flush()
	}
	for i, c := range a.calls {
		st.chunkStart(req)
		st.buf = append(st.buf, `{"tool_calls":[{"index":`...)
		st.buf = strconv.AppendInt(st.buf, int64(i), 10)
		st.buf = append(st.buf, `,"id":"call_`...)
		st.buf = append(st.buf, c.id...)
		st.buf = append(st.buf, `","type":"function","function":{"name":`...)
		st.buf = event.AppendString(st.buf, c.name)
		st.buf = append(st.buf, `,"arguments":""}}]},"finish_reason":null}]}`+"\n\n"...)
		for _, p := range pieces(c.args, a.chunks) {
			if !st.piece() {
				return
			}
			st.chunkStart(req)
			st.buf = append(st.buf, `{"tool_calls":[{"index":`...)
			st.buf = strconv.AppendInt(st.buf, int64(i), 10)
			st.buf = append(st.buf, `,"function":{"arguments":`...)
			st.buf = event.AppendString(st.buf, p)
			st.buf = append(st.buf, `}}]},"finish_reason":null}]}`+"\n\n"...)
			st.flush()
		}
	}
	if !st.piece() {
		return
	}
	st.chunkStart(req)
	st.buf = append(st.buf, `{},"finish_reason":"`...)
	st.buf = append(st.buf, stopReason(a, "stop", "tool_calls")...)
	st.buf = append(st.buf, `"}]}`+"\n\n"...)
	if req.usage {
		st.buf = append(st.buf, `data: {"id":"chatcmpl-`...)
		st.buf = append(st.buf, a.id...)
		st.buf = append(st.buf, `","object":"chat.completion.chunk","created":0,"model":`...)
		st.buf = event.AppendString(st.buf, req.model)
		st.buf = append(st.buf, `,"choices":[],"usage":`...)
		st.buf = appendChatUsage(st.buf, req, a.usage)
		st.buf = append(st.buf, "}\n\n"...)
	}
	st.buf = append(st.buf, "data: [DONE]\n\n"...)
	st.flush()
}

// reasoningFormat is the format OpenRouter names on the reasoning the
// scripted model sends: Anthropic's, whose thinking OpenRouter relays as
// signed reasoning.text details.
const reasoningFormat = "anthropic-claude-v1"

// reasoning writes one OpenRouter chunk of reasoning: the text as reasoning,
// and as a piece of the reasoning.text detail at index 0. The last piece
// carries the detail's signature and no text, as OpenRouter sends
// Anthropic's.
func (st *stream) reasoning(req *request, text, sig string) {
	st.chunkStart(req)
	st.buf = append(st.buf, `{"reasoning":`...)
	if sig != "" {
		st.buf = append(st.buf, `null,"reasoning_details":[{"type":"reasoning.text","signature":`...)
		st.buf = event.AppendString(st.buf, sig)
	} else {
		st.buf = event.AppendString(st.buf, text)
		st.buf = append(st.buf, `,"reasoning_details":[{"type":"reasoning.text","text":`...)
		st.buf = event.AppendString(st.buf, text)
	}
	st.buf = append(st.buf, `,"format":"`+reasoningFormat+`","index":0}]},"finish_reason":null}]}`+"\n\n"...)
	st.flush()
}

// chunkStart begins a chunk, up to its delta.
func (st *stream) chunkStart(req *request) {
	st.buf = append(st.buf, `data: {"id":"chatcmpl-`...)
	st.buf = append(st.buf, st.a.id...)
	st.buf = append(st.buf, `","object":"chat.completion.chunk","created":0,"model":`...)
	st.buf = event.AppendString(st.buf, req.model)
	st.buf = append(st.buf, `,"choices":[{"index":0,"delta":`...)
}

func stopReason(a *answer, done, calls string) string {
	if len(a.calls) > 0 {
		return calls
	}
	return done
}

// appendChatUsage appends usage as the Chat Completions API counts it:
// prompt_tokens holds the cached tokens too, and there is no count of
// cache writes. OpenRouter's says what it charged, where the rule says
// so, as its usage accounting does: the cost, that it was not charged to
// the account's own key for the provider (is_byok), and the provider's
// part of it.
func appendChatUsage(b []byte, req *request, u Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, u.Input+u.CacheRead, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.Input+u.CacheRead+u.Output, 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	b = append(b, '}')
	if req.format == openRouter && u.Cost != nil {
		b = append(b, `,"cost":`...)
		b = strconv.AppendFloat(b, *u.Cost, 'f', -1, 64)
		b = append(b, `,"is_byok":false,"cost_details":{"upstream_inference_cost":`...)
		b = strconv.AppendFloat(b, *u.Cost, 'f', -1, 64)
		b = append(b, '}')
	}
	return append(b, '}')
}

// writeWhole writes the answer in one response, not streamed. A cut or a
// stall has no meaning here; the answer is whole.
func writeWhole(w http.ResponseWriter, req *request, a *answer) {
	var b []byte
	switch req.format {
	case ollama:
		writeOllamaWhole(w, req, a)
		return
	case responses:
		writeResponsesWhole(w, req, a)
		return
	case anthropic:
		b = appendAnthropicWhole(b, req, a)
	default:
		b = appendChatWhole(b, req, a)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// appendAnthropicWhole appends the answer as one Messages API message.
func appendAnthropicWhole(b []byte, req *request, a *answer) []byte {
	b = append(b, `{"id":"msg_`...)
	b = append(b, a.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = event.AppendString(b, req.model)
	b = append(b, `,"content":[`...)
	n := 0
	if a.thinking != "" {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = event.AppendString(b, a.thinking)
		b = append(b, `,"signature":"sig_`...)
		b = append(b, a.id...)
		b = append(b, `"}`...)
		n++
	}
	if a.text != "" {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = event.AppendString(b, a.text)
		b = append(b, '}')
		n++
	}
	for _, c := range a.calls {
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"tool_use","id":"toolu_`...)
		b = append(b, c.id...)
		b = append(b, `","name":`...)
		b = event.AppendString(b, c.name)
		b = append(b, `,"input":`...)
		b = append(b, c.args...)
		b = append(b, '}')
		n++
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, stopReason(a, "end_turn", "tool_use")...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	b = appendAnthropicUsage(b, a.usage, a.usage.Output)
	return append(b, "}\n"...)
}

// appendAnthropicUsage appends usage as the Messages API counts it, with
// output as its output tokens (a stream's first event says 1).
func appendAnthropicUsage(b []byte, u Usage, output int64) []byte {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheWrite, 10)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, output, 10)
	return append(b, '}')
}

// appendChatWhole appends the answer as one Chat Completions response,
// OpenAI's or OpenRouter's (with its reasoning).
func appendChatWhole(b []byte, req *request, a *answer) []byte {
	b = append(b, `{"id":"chatcmpl-`...)
	b = append(b, a.id...)
	b = append(b, `","object":"chat.completion","created":0,"model":`...)
	b = event.AppendString(b, req.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if a.text == "" && len(a.calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = event.AppendString(b, a.text)
	}
	if req.format == openRouter && a.thinking != "" {
		b = append(b, `,"reasoning":`...)
		b = event.AppendString(b, a.thinking)
		b = append(b, `,"reasoning_details":[{"type":"reasoning.text","text":`...)
		b = event.AppendString(b, a.thinking)
		b = append(b, `,"signature":"sig_`...)
		b = append(b, a.id...)
		b = append(b, `","format":"`+reasoningFormat+`","index":0}]`...)
	}
	if len(a.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range a.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":"call_`...)
			b = append(b, c.id...)
			b = append(b, `","type":"function","function":{"name":`...)
			b = event.AppendString(b, c.name)
			b = append(b, `,"arguments":`...)
			b = event.AppendString(b, c.args)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":"`...)
	b = append(b, stopReason(a, "stop", "tool_calls")...)
	b = append(b, `"}],"usage":`...)
	b = appendChatUsage(b, req, a.usage)
	return append(b, "}\n"...)
}
