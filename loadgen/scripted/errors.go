package scripted

import (
	"net/http"
	"strconv"

	"lnk.dev/linkharness/store/event"
)

// writeTooLong refuses the prompt as too long, in each provider's words.
func writeTooLong(w http.ResponseWriter, f format, tokens int) {
	const window = 200000
	tokens = max(tokens, window+1)
	var msg string
	switch f {
	case anthropic:
		msg = "prompt is too long: " + strconv.Itoa(tokens) + " tokens > " + strconv.Itoa(window) + " maximum"
	case openAI:
		msg = "This model's maximum context length is " + strconv.Itoa(window) + " tokens. However, your messages resulted in " +
			strconv.Itoa(tokens) + " tokens. Please reduce the length of the messages."
	case openRouter:
		msg = "This endpoint's maximum context length is " + strconv.Itoa(window) + " tokens. However, you requested about " +
			strconv.Itoa(tokens) + " tokens. Please reduce the length of either one."
	case responses:
		msg = "Your input exceeds the context window of this model. Please adjust your input and try again."
	case ollama:
		msg = "the prompt of " + strconv.Itoa(tokens) + " tokens does not fit the context window of " + strconv.Itoa(window) + " tokens"
	}
	writeError(w, f, http.StatusBadRequest, msg, "context_length_exceeded", 0)
}

// writeError writes a provider's error body with status code; an empty msg
// is the status's own words, errCode is OpenAI's code, if any. retryAfter,
// in seconds, is sent when above 0.
func writeError(w http.ResponseWriter, f format, code int, msg, errCode string, retryAfter int) {
	if msg == "" {
		msg = http.StatusText(code)
		if code == 529 {
			msg = "Overloaded"
		}
	}
	var b []byte
	switch f {
	case anthropic:
		b = append(b, `{"type":"error","error":{"type":"`...)
		b = append(b, anthropicType(code)...)
		b = append(b, `","message":`...)
		b = event.AppendString(b, msg)
		b = append(b, "}}\n"...)
	case openAI, responses:
		b = append(b, `{"error":{"message":`...)
		b = event.AppendString(b, msg)
		b = append(b, `,"type":"`...)
		b = append(b, openAIType(code)...)
		b = append(b, `","param":null,"code":`...)
		if errCode != "" {
			b = event.AppendString(b, errCode)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, "}}\n"...)
	case openRouter:
		b = append(b, `{"error":{"message":`...)
		b = event.AppendString(b, msg)
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(code), 10)
		b = append(b, "}}\n"...)
	case ollama:
		b = append(b, `{"error":`...)
		b = event.AppendString(b, msg)
		b = append(b, "}\n"...)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// anthropicType is the error type Anthropic sends with a status.
func anthropicType(code int) string {
	switch code {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// openAIType is the error type OpenAI sends with a status.
func openAIType(code int) string {
	switch {
	case code == 429:
		return "rate_limit_exceeded"
	case code >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
