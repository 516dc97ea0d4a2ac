package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"lnk.dev/linkharness/store/event"
)

// DefaultStall is how long a stream may go without a byte before Call gives
// up on it, when the Request does not say.
const DefaultStall = 60 * time.Second

// DefaultTimeout is the longest a whole call may take, from the request's
// start to the answer's end, when the Request does not say. Bytes that
// keep coming (a proxy's keep-alives, a trickle) push back the stall timer,
// never this one.
const DefaultTimeout = 10 * time.Minute

// DefaultMaxAnswerBytes is the most of an answer read, its text, thinking
// and calls' arguments together, when the Request does not say: the
// largest event a store keeps, so an answer past it could not be kept.
const DefaultMaxAnswerBytes = event.MaxBytes

// DefaultMaxTokens is the answer's limit sent to a provider that requires
// one (Anthropic) when the Request does not say.
const DefaultMaxTokens = 4096

// Errors a Call returns, wrapped with the provider and what happened; test
// them with errors.Is.
var (
	// ErrTooLong comes when the provider refused the prompt as too long for
	// the model's window. No provider has a code of its own for it, so it is
	// told by the message: see tooLong.
	ErrTooLong = errors.New("model: prompt too long")

	// ErrCut comes when the stream ended before the provider said the answer
	// was complete (message_stop, [DONE]): the connection closed or broke
	// mid-answer.
	ErrCut = errors.New("model: stream cut off")

	// ErrStalled comes when the provider sent no byte for the Request's Stall
	// time, before the headers or mid-stream.
	ErrStalled = errors.New("model: stream stalled")

	// ErrTimeout comes when the whole call took longer than the Request's
	// Timeout, however many bytes came meanwhile.
	ErrTimeout = errors.New("model: call timed out")

	// ErrTooLarge comes when the answer grew past the Request's
	// MaxAnswerBytes: the stream is ended there rather than read on.
	ErrTooLarge = errors.New("model: answer too large")

	// ErrUnavailable comes when the provider said the model is overloaded
	// or unavailable for now (503, 529, overloaded_error): another model
	// may answer where this one cannot.
	ErrUnavailable = errors.New("model: model unavailable")

	// ErrUnreachable comes when the request reached no answer from the
	// model proxy: the connection was refused, reset or closed before a
	// status came.
	ErrUnreachable = errors.New("model: proxy unreachable")

	// ErrMalformed comes when the stream holds what no provider sends: an
	// event that is not JSON, a line over maxLine, tool arguments that are not
	// a JSON object.
	ErrMalformed = errors.New("model: malformed stream")
)

// Message is one turn of the conversation sent to the model.
type Message struct {
	Role string // "user" or "assistant"
	Text string

	// Thinking is, on an assistant message, the raw JSON array of its
	// thinking blocks, [{"thinking":..,"signature":..}] (or {"data":..} for a
	// redacted block; {"openrouter":{..}} for one of OpenRouter's
	// reasoning_details), as kept in the answer event. It is replayed:
	// to Anthropic its signed blocks, which it needs beside the tool calls
	// they led to; to OpenRouter its own; to Ollama the text of any. It is
	// never shown.
	Thinking []byte

	Calls   []event.Call // assistant: the tool calls it made
	Results []Result     // user: tool results answering the previous assistant's calls
}

// Result is one tool's answer to one call.
type Result struct {
	CallID  string
	Name    string
	Text    string
	IsError bool
}

// Tool is a tool offered to the model. Schema is its input's JSON schema
// object; empty means an object with any properties.
type Tool struct {
	Name        string
	Description string
	Schema      []byte
}

// Request is one call to a model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int // 0: the provider's default, DefaultMaxTokens where one is required

	// Window is the window in tokens the prompt was sized for. A runtime
	// that runs a model with the window it is told (Ollama: num_ctx) is
	// sent it; 0 sends none.
	Window int

	// SystemStable is how many bytes at the start of System change least
	// (Link's base through who you are). Anthropic is sent them as a block of
	// their own with a cache breakpoint, and the rest of System, its leading
	// newlines trimmed, as a second block with another; 0 or len(System)
	// sends System as one block.
	SystemStable int

	// CacheThrough, when not 0, is how many of Messages the prompt's last
	// cache breakpoint follows, in place of all of them: a continuation of
	// an earlier request (a summary asked after the answer) keeps that
	// request's breakpoints where they were, so all of it is read from the
	// cache and nothing more is written there. Only Anthropic marks them.
	CacheThrough int

	// CacheKey, when not empty, is sent to OpenAI and OpenRouter as
	// prompt_cache_key: the same for every request of a conversation, so its
	// requests reach the machines that hold its prefix.
	CacheKey string

	// Prefix, when not nil, holds Messages[:Prefix.Len()] already
	// encoded, kept from an earlier request of the conversation: a client
	// of its format sends its bytes rather than encoding those messages
	// again, and encodes only the rest. The bytes sent are the same either
	// way. A client of another format encodes every message.
	Prefix *Prefix

	// Stall is the longest the stream may go without a byte, from the
	// request's start; 0 means DefaultStall.
	Stall time.Duration

	// Timeout is the longest the whole call may take; 0 means
	// DefaultTimeout.
	Timeout time.Duration

	// MaxAnswerBytes is the most of the answer read (text, thinking and
	// calls' arguments together); 0 means DefaultMaxAnswerBytes.
	MaxAnswerBytes int
}

// Response is a model's whole answer.
type Response struct {
	Text       string
	Thinking   []byte       // raw JSON array of thinking blocks, as Message.Thinking
	Calls      []event.Call // Args always a JSON object
	ResponseID string
	Model      string

	// Usage is normalized across providers: Input is the prompt tokens billed
	// at the full input price, that is without the tokens read from or written
	// to the cache, which are CacheRead and CacheWrite. Anthropic reports it
	// so (input_tokens); for OpenAI it is prompt_tokens less cached_tokens.
	Usage      event.Usage
	StopReason string        // as the provider said it: end_turn, tool_use, stop, tool_calls, length …
	Latency    time.Duration // from the request's start to the stream's last byte

	// Cost is what the provider said it charged for the call, where it
	// says: OpenRouter does (openRouterCost). Anthropic, OpenAI and Ollama
	// report tokens only, so their calls are priced from the model facts.
	Cost Cost
}

// Cost is what a provider said it charged for model calls. The zero value
// is nothing said.
type Cost struct {
	USD      float64 // what was charged, in US dollars
	Reported bool    // the provider said it; else USD is 0 and the usage is to be priced
}

// Client calls one provider's model. Implementations are safe for
// concurrent use.
type Client interface {
	// Call sends req and streams the answer; onText (may be nil) gets each
	// text fragment as it comes, a string that stays valid after the call.
	Call(ctx context.Context, req *Request, onText func(fragment string)) (*Response, error)
}

// Describer is a Client of a runtime on the machine, which can say what it
// runs a model with: found by type assertion.
type Describer interface {
	// Describe asks the runtime about the model it names name.
	Describe(ctx context.Context, name string) (Runtime, error)
}

// Runtime is what a runtime says of a model.
type Runtime struct {
	Trained int // the window the model was trained for; 0 when not said
	Runs    int // the window it runs the model with unless told otherwise
}

// New returns the client of provider ("anthropic", "openai", "openrouter"
// or "ollama"). Its base URL is LNK_MODEL_PROXY_<PROVIDER> if set, else
// LNK_MODEL_PROXY + "/" + provider; LNK_MODEL_PROXY_KEY, if set, is sent as
// the provider's key. A nil hc means http.DefaultClient; it should have no
// overall Timeout, since an answer streams for as long as it takes.
func New(provider string, getenv func(string) string, hc *http.Client) (Client, error) {
	base, err := baseURL(provider, getenv)
	if err != nil {
		return nil, err
	}
	return newClient(provider, base, getenv("LNK_MODEL_PROXY_KEY"), hc)
}

// newClient is provider's client of the API at base, sending key.
func newClient(provider, base, key string, hc *http.Client) (Client, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	switch provider {
	case "anthropic":
		return &Anthropic{Base: base, Key: key, HTTP: hc}, nil
	case "openai", "openrouter":
		return &OpenAI{Provider: provider, Base: base, Key: key, HTTP: hc}, nil
	case "ollama":
		return &Ollama{Base: base, Key: key, HTTP: hc}, nil
	}
	return nil, fmt.Errorf("model: unknown provider %q (anthropic, openai, openrouter or ollama)", provider)
}

// StallOf is how long a model's stream may go without a byte in the
// environment getenv reads: LNK_MODEL_STALL (a duration, "90s") when set,
// else DefaultStall.
func StallOf(getenv func(string) string) time.Duration {
	if d, err := time.ParseDuration(getenv("LNK_MODEL_STALL")); err == nil && d > 0 {
		return d
	}
	return DefaultStall
}

// baseURL is where provider's API sits: its own override, or its folder
// under the model proxy.
func baseURL(provider string, getenv func(string) string) (string, error) {
	if provider == "" {
		return "", errors.New("model: no provider")
	}
	override := "LNK_MODEL_PROXY_" + strings.ToUpper(provider)
	if b := getenv(override); b != "" {
		return strings.TrimRight(b, "/"), nil
	}
	if b := getenv("LNK_MODEL_PROXY"); b != "" {
		return strings.TrimRight(b, "/") + "/" + provider, nil
	}
	return "", fmt.Errorf("model: %s: no model proxy: set LNK_MODEL_PROXY or %s", provider, override)
}

// OwnName is the provider's own name for the model named name: OpenRouter
// names every model maker/model; the others know it without the maker
// (Anthropic's claude-opus-5-5, Ollama's qwen3:8b).
func OwnName(provider, name string) string {
	if provider == "openrouter" {
		return name
	}
	if _, m, ok := strings.Cut(name, "/"); ok {
		return m
	}
	return name
}
