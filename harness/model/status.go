package model

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
)

// maxErrorBody is how much of an error response is read for its message.
const maxErrorBody = 64 << 10

// StatusError is a provider's refusal: a non-2xx response, or an error event
// in the stream (with the status its type stands for). It wraps ErrTooLong
// when the message says the prompt was too long.
type StatusError struct {
	Provider   string
	Code       int           // HTTP status; for an error event, the status its type stands for, else 0
	RetryAfter time.Duration // from Retry-After, 0 when not sent
	Type       string        // the provider's error type or code, when it gave one
	Message    string        // the provider's message, or the start of the body
}

func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("model: ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Code != 0 {
		b.WriteString(strconv.Itoa(e.Code))
		b.WriteByte(' ')
	}
	if e.Type != "" {
		b.WriteString(e.Type)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns ErrTooLong when the provider refused the prompt as too
// long, ErrUnavailable when it said the model is overloaded or
// unavailable, else nil.
func (e *StatusError) Unwrap() error {
	switch {
	case tooLong(e.Message) || tooLong(e.Type):
		return ErrTooLong
	case unavailable(e):
		return ErrUnavailable
	}
	return nil
}

// unavailable tells an answer that the model cannot answer for now, where
// another might: 503 and Anthropic's 529, or an error type or message
// saying overloaded. A rate limit (429) is not: it is the caller's.
func unavailable(e *StatusError) bool {
	return e.Code == http.StatusServiceUnavailable || e.Code == 529 ||
		e.Type == "overloaded_error" || strings.Contains(strings.ToLower(e.Message), "overloaded")
}

// tooLong tells a refusal of the prompt as too long by its words, the only
// sign the providers share: Anthropic's "prompt is too long", OpenAI's and
// OpenRouter's "context length" (code context_length_exceeded), a runtime's
// "context window".
func tooLong(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") ||
		strings.Contains(m, "context length") ||
		strings.Contains(m, "context_length") ||
		strings.Contains(m, "context window")
}

// statusError reads a non-2xx response into a StatusError.
func statusError(provider string, resp *http.Response) *StatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &StatusError{Provider: provider, Code: resp.StatusCode}
	e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	var p fastjson.Parser
	if v, err := p.ParseBytes(body); err == nil {
		errorFields(e, v)
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 512 {
			e.Message = e.Message[:512] + "…"
		}
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return e
}

// errorFields fills e's message and type from a provider's error object:
// Anthropic's {"type":"error","error":{"type","message"}}, OpenAI's
// {"error":{"message","type","code"}}, a runtime's {"error":"message"}.
func errorFields(e *StatusError, v *fastjson.Value) {
	ev := v.Get("error")
	if ev == nil {
		e.Message = string(v.GetStringBytes("message"))
		return
	}
	if ev.Type() == fastjson.TypeString {
		e.Message = string(ev.GetStringBytes())
		return
	}
	e.Message = string(ev.GetStringBytes("message"))
	if c := ev.Get("code"); c != nil && c.Type() == fastjson.TypeString {
		e.Type = string(c.GetStringBytes())
	} else {
		e.Type = string(ev.GetStringBytes("type"))
	}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil {
		if s <= 0 || s > 24*3600 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// anthropicErrorCodes are the statuses Anthropic documents for its error
// types, so an error event mid-stream reads like the response it stands for.
var anthropicErrorCodes = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"overloaded_error":      529,
}
