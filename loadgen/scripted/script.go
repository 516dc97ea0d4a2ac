package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Script says how the scripted model answers. The zero value (and a nil
// *Script) answers every request with the default answer, at once.
type Script struct {
	// Seed makes the distributions' draws differ between runs that want
	// them to; the same seed and the same request give the same answer.
	Seed uint64 `toml:"seed"`

	// Rules are tried in order; the first that matches answers. A request
	// no rule matches gets the default answer.
	Rules []Rule `toml:"rule"`

	// Cache reports each answer's input as a provider's prompt cache would
	// (see cache.go): what repeats the start of a recent request of the
	// same conversation as read from the cache. A rule's own usage wins.
	Cache bool `toml:"cache"`

	// Models are the models a runtime on the machine has, as Ollama's
	// /api/show describes them; another model is not found.
	Models []Model `toml:"model"`
}

// Model is a model as Ollama's /api/show describes it.
type Model struct {
	Name          string `toml:"name"`           // as Ollama names it: qwen3:8b
	ContextLength int    `toml:"context_length"` // the window it was trained for; 0 leaves it out
	NumCtx        int    `toml:"num_ctx"`        // the window it is set to run with; 0: none set, Ollama's default
}

// Rule is one way of answering: what it matches, what it answers, how.
type Rule struct {
	// Match is a substring of the last user text: the text of the last user
	// message that has text. "any" or empty matches every request.
	Match string `toml:"match"`

	// Results is "yes" to match only a request whose last message carries
	// tool results, "no" only one whose does not, "any" or empty either.
	Results string `toml:"results"`

	// Round, over 0, matches only a request after exactly that many rounds
	// of tool calls since the last user text: 1 is the request carrying
	// the first round's results, 2 the second's. 0 matches any.
	Round int `toml:"round"`

	// Text is the answer's text; {text} in it stands for the last user text.
	// A rule with no text, no calls and no thinking gives the default answer.
	Text string `toml:"text"`

	// Thinking is a thinking block streamed before the text: with a
	// signature in Anthropic's format, and in OpenRouter's as reasoning and
	// a signed reasoning.text detail, as it relays Anthropic's; as reasoning
	// in Ollama's and the Responses API's. OpenAI's Chat Completions has no
	// place for it.
	Thinking string `toml:"thinking"`

	// Calls are tool calls the answer makes, after its text.
	Calls []Call `toml:"call"`

	// AnswerBytes, when set, makes the text exactly that long: cut, or
	// followed by filler words. With AnswerBytesMax it is drawn uniformly
	// from [AnswerBytes, AnswerBytesMax].
	AnswerBytes    int `toml:"answer_bytes"`
	AnswerBytesMax int `toml:"answer_bytes_max"`

	// LatencyMS is the wait before the first byte; with LatencyMSMax it is
	// drawn uniformly from [LatencyMS, LatencyMSMax].
	LatencyMS    int `toml:"latency_ms"`
	LatencyMSMax int `toml:"latency_ms_max"`

	// Chunks is how many pieces each streamed text, thinking and call's
	// arguments come in (default 1); ChunkMS the wait between pieces.
	Chunks  int `toml:"chunks"`
	ChunkMS int `toml:"chunk_ms"`

	// Usage is what the answer reports. Input left at 0 is the request's
	// bytes / 4, Output left at 0 the answer's bytes / 4.
	Usage Usage `toml:"usage"`

	// Refuse refuses the prompt as too long, with status 400 and each
	// provider's own words.
	Refuse bool `toml:"refuse"`

	// Status fails the request with this status (400-599) and the
	// provider's error body; RetryAfter, in seconds, is sent as Retry-After.
	// With AfterChunks, the answer starts, and after that many pieces the
	// stream ends with the provider's error event instead.
	Status     int `toml:"status"`
	RetryAfter int `toml:"retry_after"`

	// Stall sends the headers and AfterChunks pieces of the answer, then
	// nothing until the client goes or the server stops. Cut sends as much
	// and then ends the stream, without the answer's end.
	Stall       bool `toml:"stall"`
	Cut         bool `toml:"cut"`
	AfterChunks int  `toml:"after_chunks"`

	// PingMS, with Stall, sends a keep-alive every PingMS while stalled, as
	// a provider's proxy does: an SSE comment line, and for Anthropic also
	// its ping event; a blank line for Ollama. The stream sees bytes but
	// never an answer.
	PingMS int `toml:"ping_ms"`

	// TrickleMS sends the answer one byte at a time, TrickleMS apart.
	TrickleMS int `toml:"trickle_ms"`
}

// Call is a tool call a rule's answer makes. Args is a JSON object.
type Call struct {
	Name string `toml:"name"`
	Args string `toml:"args"`
}

// Usage is the token counts an answer reports and, in OpenRouter's
// format, what it was charged.
type Usage struct {
	Input      int64 `toml:"input"`
	Output     int64 `toml:"output"`
	CacheRead  int64 `toml:"cache_read"`
	CacheWrite int64 `toml:"cache_write"`

	// Cost, when set, is reported as OpenRouter reports what it charged:
	// usage.cost, in US dollars (0 too: a free model's). The other
	// formats have no place for it.
	Cost *float64 `toml:"cost"`
}

// tokens says whether u sets any token count.
func (u *Usage) tokens() bool {
	return u.Input != 0 || u.Output != 0 || u.CacheRead != 0 || u.CacheWrite != 0
}

// ParseScript reads a script from TOML. Keys it does not know are an
// error, so a misspelt behaviour is not silently ignored.
func ParseScript(b []byte) (*Script, error) {
	var s Script
	d := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) {
			return nil, fmt.Errorf("scripted: script: %s", sm.String())
		}
		return nil, fmt.Errorf("scripted: script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate says what is wrong with a script, naming the rule.
func (s *Script) Validate() error {
	if s == nil {
		return nil
	}
	for i := range s.Rules {
		if err := s.Rules[i].validate(); err != nil {
			return fmt.Errorf("scripted: rule %d (match %q): %w", i+1, s.Rules[i].Match, err)
		}
	}
	for i, m := range s.Models {
		if m.Name == "" || m.ContextLength < 0 || m.NumCtx < 0 {
			return fmt.Errorf("scripted: model %d (%q): a name and windows of 0 or more tokens", i+1, m.Name)
		}
	}
	return nil
}

func (r *Rule) validate() error {
	switch r.Results {
	case "", "any", "yes", "no":
	default:
		return fmt.Errorf("results %q is not any, yes or no", r.Results)
	}
	for _, c := range r.Calls {
		if c.Name == "" {
			return errors.New("a call without a name")
		}
		args := strings.TrimSpace(c.Args)
		if args != "" && (args[0] != '{' || !json.Valid([]byte(args))) {
			return fmt.Errorf("call %s: args %q is not a JSON object", c.Name, c.Args)
		}
	}
	if r.Round < 0 || r.AnswerBytes < 0 || r.LatencyMS < 0 || r.Chunks < 0 || r.ChunkMS < 0 || r.AfterChunks < 0 || r.RetryAfter < 0 || r.PingMS < 0 || r.TrickleMS < 0 {
		return errors.New("a negative number")
	}
	if c := r.Usage.Cost; c != nil && !(*c >= 0 && *c <= math.MaxFloat64) {
		return fmt.Errorf("usage cost %v is not an amount", *c)
	}
	if r.AnswerBytesMax != 0 && r.AnswerBytesMax < r.AnswerBytes {
		return fmt.Errorf("answer_bytes_max %d is below answer_bytes %d", r.AnswerBytesMax, r.AnswerBytes)
	}
	if r.LatencyMSMax != 0 && r.LatencyMSMax < r.LatencyMS {
		return fmt.Errorf("latency_ms_max %d is below latency_ms %d", r.LatencyMSMax, r.LatencyMS)
	}
	if r.Status != 0 && (r.Status < 400 || r.Status > 599) {
		return fmt.Errorf("status %d is not an error status (400-599)", r.Status)
	}
	if r.PingMS > 0 && !r.Stall {
		return errors.New("ping_ms without stall")
	}
	n := 0
	for _, b := range []bool{r.Refuse, r.Status != 0, r.Stall, r.Cut} {
		if b {
			n++
		}
	}
	if n > 1 {
		return errors.New("more than one of refuse, status, stall and cut")
	}
	return nil
}

// matches tells whether r answers a request with this last user text,
// with or without tool results, rounds of them since the text.
func (r *Rule) matches(text string, results bool, rounds int) bool {
	if r.Round > 0 && r.Round != rounds {
		return false
	}
	switch r.Results {
	case "yes":
		if !results {
			return false
		}
	case "no":
		if results {
			return false
		}
	}
	return r.Match == "" || r.Match == "any" || strings.Contains(text, r.Match)
}
