package model

import "lnk.dev/linkharness/store/event"

// The Chat Completions format (OpenAI's, OpenRouter's) and Ollama's
// /api/chat share their messages' shape: the system prompt is the first
// message, each tool result a message of role tool, the tools functions.
// They differ in how a result names its call and in an assistant
// message's keys.

// appendChatMessages appends, in format (FormatOpenAI, FormatOpenRouter or
// FormatOllama), req's messages after its system prompt, the messages its
// Prefix keeps sent as they are, then its tools, and closes the request's
// object.
func appendChatMessages(dst []byte, req *Request, format string) ([]byte, error) {
	dst = append(dst, `,"messages":[`...)
	n := 0
	if req.System != "" {
		dst, n = appendStringObject(dst, n, `{"role":"system","content":`, req.System)
	}
	first := 0
	if p := kept(req, format); p != nil {
		dst, first = p.appendTo(dst, n > 0, -1), p.n
		n += p.wire
	}
	for i := first; i < len(req.Messages); i++ {
		var err error
		if dst, n, err = appendChatMessage(dst, format, &req.Messages[i], n); err != nil {
			return nil, messageError(format, i, err)
		}
	}
	dst = append(dst, ']')
	if len(req.Tools) > 0 {
		dst = appendTools(dst, req.Tools, `{"type":"function","function":{"name":`, `,"parameters":`, `}}`, false)
	}
	return append(dst, '}'), nil
}

// appendChatMessage appends m in format; n counts the wire messages
// before it, and the count after it is returned (a user's message is one
// more for each result).
func appendChatMessage(dst []byte, format string, m *Message, n int) ([]byte, int, error) {
	switch m.Role {
	case "user":
		if format == FormatOllama {
			dst, n = appendOllamaUser(dst, m, n)
		} else {
			dst, n = appendOpenAIUser(dst, m, n)
		}
		return dst, n, nil
	case "assistant":
		if format == FormatOllama {
			return appendOllamaAssistant(dst, m, n)
		}
		return appendOpenAIAssistant(dst, m, n, format == FormatOpenRouter)
	}
	return nil, 0, roleError(m.Role)
}

// appendToolUser appends a user message in the formats where each result
// is a message of role tool, opened by head and naming its call by what
// name gives (Chat Completions: the call's id; Ollama: the tool's name),
// then the text, if any. Neither format has a mark for a failed call, so
// the words say it. n counts the messages so far.
func appendToolUser(dst []byte, m *Message, n int, head string, name func(*Result) string) ([]byte, int) {
	for i := range m.Results {
		r := &m.Results[i]
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, head...)
		dst = event.AppendString(dst, name(r))
		dst = append(dst, `,"content":`...)
		if r.IsError {
			dst = event.AppendString(dst, "error: "+r.Text)
		} else {
			dst = event.AppendString(dst, r.Text)
		}
		dst = append(dst, '}')
		n++
	}
	if m.Text != "" || len(m.Results) == 0 {
		dst, n = appendStringObject(dst, n, `{"role":"user","content":`, m.Text)
	}
	return dst, n
}

// appendToolCalls appends an assistant message's calls, when it made any,
// as its "tool_calls" array, each as appendCall writes it in the format.
func appendToolCalls(dst []byte, calls []event.Call, appendCall func([]byte, *event.Call) []byte) []byte {
	if len(calls) == 0 {
		return dst
	}
	dst = append(dst, `,"tool_calls":[`...)
	for i := range calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCall(dst, &calls[i])
	}
	return append(dst, ']')
}
