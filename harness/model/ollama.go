package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// OllamaDefaultWindow is the window Ollama runs a model with when nothing
// sets num_ctx: its default, far smaller than most models were trained for.
const OllamaDefaultWindow = 4096

// maxShowBody is the most of an /api/show answer read. Without "verbose"
// it leaves out the tokenizer's arrays and is a few KiB.
const maxShowBody = 8 << 20

// Ollama is a client of Ollama's native API: /api/chat, streamed as one
// JSON object a line, with the window sent as options.num_ctx, and
// /api/show. Its fields are set once before use; it is then safe for
// concurrent use.
type Ollama struct {
	Base string       // the API's base URL; requests go to Base + "/api/chat"
	Key  string       // sent as a bearer token when not empty
	HTTP *http.Client // nil means http.DefaultClient

	to target // made at the first call from Base and Key, which then stay
}

var (
	_ Client    = (*Ollama)(nil)
	_ Describer = (*Ollama)(nil)
)

// Call implements Client.
func (c *Ollama) Call(ctx context.Context, req *Request, onText func(string)) (*Response, error) {
	d := &ollamaStream{answer: answer{room: newRoom(req)}}
	if err := c.prepare(&d.post, req); err != nil {
		return nil, err
	}
	return d.ask(ctx, func(s *sseReader) error { return d.decode(s, onText) })
}

// prepare makes the call that sends req.
func (c *Ollama) prepare(p *post, req *Request) error {
	again := func(dst []byte) ([]byte, error) { return appendOllamaRequest(dst, req) }
	body, err := again(newBody(bodySize(req, FormatOllama)))
	if err != nil {
		return err
	}
	u, h, err := c.to.get(func() (string, http.Header) {
		return c.Base + "/api/chat", bearerHeader("application/x-ndjson", c.Key)
	})
	if err != nil {
		return fmt.Errorf("model: ollama: %w", err)
	}
	*p = post{provider: "ollama", hc: httpClient(c.HTTP), url: u, body: body, again: again, header: h, stall: req.Stall, timeout: req.Timeout}
	return nil
}

// Describe implements Describer with /api/show: the trained window is
// model_info's <architecture>.context_length, the window it runs with is
// num_ctx in the model's parameters, else OllamaDefaultWindow.
func (c *Ollama) Describe(ctx context.Context, name string) (Runtime, error) {
	body := event.AppendString([]byte(`{"model":`), name)
	body = append(body, '}')
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/api/show", bytes.NewReader(body))
	if err != nil {
		return Runtime{}, fmt.Errorf("model: ollama: %w", err)
	}
	hreq.Header = bearerHeader("application/json", c.Key)
	resp, err := httpClient(c.HTTP).Do(hreq)
	if err != nil {
		return Runtime{}, fmt.Errorf("model: ollama: show %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Runtime{}, statusError("ollama", resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxShowBody+1))
	if err != nil {
		return Runtime{}, fmt.Errorf("model: ollama: show %s: %w", name, err)
	}
	if len(b) > maxShowBody {
		return Runtime{}, fmt.Errorf("model: ollama: show %s: %w: over %d bytes", name, ErrMalformed, maxShowBody)
	}
	return parseShow(b)
}

// parseShow reads an /api/show answer.
func parseShow(b []byte) (Runtime, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil {
		return Runtime{}, fmt.Errorf("model: ollama: show: %w: %v", ErrMalformed, err)
	}
	rt := Runtime{Runs: OllamaDefaultWindow}
	if info := v.GetObject("model_info"); info != nil {
		info.Visit(func(key []byte, v *fastjson.Value) {
			if bytes.HasSuffix(key, []byte(".context_length")) && v.Type() == fastjson.TypeNumber {
				rt.Trained = v.GetInt()
			}
		})
	}
	for line := range strings.Lines(string(v.GetStringBytes("parameters"))) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				rt.Runs = n
			}
		}
	}
	return rt, nil
}

// appendOllamaRequest appends req as an /api/chat request body, its keys in
// a fixed order. The window goes as options.num_ctx, since Ollama runs a
// model with its small default unless told; the answer's limit as
// num_predict.
func appendOllamaRequest(dst []byte, req *Request) ([]byte, error) {
	dst = append(dst, `{"model":`...)
	dst = event.AppendString(dst, req.Model)
	dst = append(dst, `,"stream":true`...)
	if req.Window > 0 || req.MaxTokens > 0 {
		dst = append(dst, `,"options":{`...)
		if req.Window > 0 {
			dst = append(dst, `"num_ctx":`...)
			dst = strconv.AppendInt(dst, int64(req.Window), 10)
		}
		if req.MaxTokens > 0 {
			if req.Window > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `"num_predict":`...)
			dst = strconv.AppendInt(dst, int64(req.MaxTokens), 10)
		}
		dst = append(dst, '}')
	}
	return appendChatMessages(dst, req, FormatOllama)
}

// appendOllamaUser appends a user message: a tool message for each result,
// named by its tool (Ollama matches results by name and order), then the
// text, if any. n counts the messages so far.
func appendOllamaUser(dst []byte, m *Message, n int) ([]byte, int) {
	return appendToolUser(dst, m, n, `{"role":"tool","tool_name":`, func(r *Result) string { return r.Name })
}

// appendOllamaAssistant appends an assistant message, its thinking as one
// text (Ollama keeps no signature) and its calls with their arguments as
// objects.
func appendOllamaAssistant(dst []byte, m *Message, n int) ([]byte, int, error) {
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"role":"assistant","content":`...)
	dst = event.AppendString(dst, m.Text)
	if len(m.Thinking) > 0 {
		text, err := thinkingText(m.Thinking)
		if err != nil {
			return nil, 0, err
		}
		if text != "" {
			dst = append(dst, `,"thinking":`...)
			dst = event.AppendString(dst, text)
		}
	}
	dst = appendToolCalls(dst, m.Calls, appendOllamaCall)
	return append(dst, '}'), n + 1, nil
}

// appendOllamaCall appends a call, its arguments as an object.
func appendOllamaCall(dst []byte, c *event.Call) []byte {
	dst = append(dst, `{"function":{"name":`...)
	dst = event.AppendString(dst, c.Name)
	dst = append(dst, `,"arguments":`...)
	dst = appendArgs(dst, c.Args)
	return append(dst, `}}`...)
}

// thinkingText joins the text of kept thinking blocks; redacted blocks
// have none.
func thinkingText(thinking []byte) (string, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(thinking)
	if err != nil {
		return "", fmt.Errorf("thinking is not JSON: %v", err)
	}
	blocks, err := v.Array()
	if err != nil {
		return "", errors.New("thinking is not a JSON array")
	}
	var b strings.Builder
	for _, bl := range blocks {
		if t := bl.GetStringBytes("thinking"); len(t) > 0 {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.Write(t)
		}
	}
	return b.String(), nil
}

// ollamaStream decodes an /api/chat stream, one JSON object a line, into a
// Response. It is used for one stream, with one parser for all its lines.
type ollamaStream struct {
	answer
	thinking []byte
	callID   string // the start of the ids given to calls Ollama sends without one
}

// decode reads lines until the one that says done.
func (d *ollamaStream) decode(s *sseReader, onText func(string)) error {
	next := func() ([]byte, error) {
		for {
			line, err := s.readLine()
			if err != nil {
				return nil, err
			}
			if line = trimSpace(line); len(line) > 0 {
				return line, nil
			}
		}
	}
	return d.decodeEach("a line", next, func(v *fastjson.Value) (bool, error) { return d.line(v, onText) })
}

// line takes in one line; it returns true on the one that says done.
func (d *ollamaStream) line(v *fastjson.Value, onText func(string)) (bool, error) {
	if v.Get("error") != nil {
		e := &StatusError{Provider: "ollama"}
		errorFields(e, v)
		return false, e
	}
	if d.resp.Model == "" {
		d.resp.Model = string(v.GetStringBytes("model"))
	}
	if m := v.Get("message"); m != nil {
		if err := d.room.take(len(m.GetStringBytes("content")) + len(m.GetStringBytes("thinking"))); err != nil {
			return false, err
		}
		d.appendText(m.GetStringBytes("content"), onText)
		if t := m.GetStringBytes("thinking"); len(t) > 0 {
			if len(d.thinking)+len(t) > maxLine {
				return false, fmt.Errorf("%w: thinking over %d bytes", ErrMalformed, maxLine)
			}
			d.thinking = append(d.thinking, t...)
		}
		for _, tc := range m.GetArray("tool_calls") {
			if err := d.call(tc); err != nil {
				return false, err
			}
		}
	}
	if !v.GetBool("done") {
		return false, nil
	}
	d.resp.StopReason = string(v.GetStringBytes("done_reason"))
	setCount(&d.resp.Usage.Input, v.Get("prompt_eval_count"))
	setCount(&d.resp.Usage.Output, v.Get("eval_count"))
	if len(d.thinking) > 0 {
		d.resp.Thinking = append(d.resp.Thinking, `[{"thinking":`...)
		d.resp.Thinking = event.AppendString(d.resp.Thinking, string(d.thinking))
		d.resp.Thinking = append(d.resp.Thinking, "}]"...)
	}
	if len(d.resp.Calls) > 0 && d.resp.StopReason == "stop" {
		d.resp.StopReason = "tool_calls" // Ollama says stop either way
	}
	return true, nil
}

// call takes in one tool call, sent whole. Ollama gives calls no id (or,
// in later versions, one); one is made where it gives none, unique to the
// answer and the time it came.
func (d *ollamaStream) call(tc *fastjson.Value) error {
	if len(d.resp.Calls) >= maxBlocks {
		return fmt.Errorf("%w: over %d tool calls", ErrMalformed, maxBlocks)
	}
	name := string(tc.GetStringBytes("function", "name"))
	var args []byte
	switch a := tc.Get("function", "arguments"); {
	case a == nil:
		args = []byte("{}")
	case a.Type() == fastjson.TypeObject:
		args = a.MarshalTo(nil)
	case a.Type() == fastjson.TypeString: // as some models' templates give them
		var err error
		if args, err = callArgs(a.GetStringBytes()); err != nil {
			return fmt.Errorf("%w: call %s: %v", ErrMalformed, name, err)
		}
		args = append([]byte(nil), args...)
	default:
		return fmt.Errorf("%w: call %s: arguments are not a JSON object", ErrMalformed, name)
	}
	if err := d.room.take(len(args)); err != nil {
		return err
	}
	id := string(tc.GetStringBytes("id"))
	if id == "" {
		if d.callID == "" {
			d.callID = "call_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_"
		}
		id = d.callID + strconv.Itoa(len(d.resp.Calls))
	}
	d.resp.Calls = append(d.resp.Calls, event.Call{ID: id, Name: name, Args: args})
	return nil
}
