// Package model calls a model through Link's model proxy, in the provider's
// own wire format, always streamed: Anthropic's Messages API, the Chat
// Completions API of OpenAI, OpenRouter and the runtimes that speak it, and
// Ollama's own /api/chat (one JSON object a line), which is told the window
// to run the model with. A runtime's client is also a Describer: Ollama's
// /api/show says the window a model was trained for and the one it runs.
//
// A Client sends a Request (the system prompt, the conversation with its
// tool calls, results and thinking, the tools) and returns the whole
// Response, handing each text fragment on as it comes. Request bodies are
// built by appending to a buffer with keys in a fixed order, so the same
// Request is the same bytes every turn and the provider's prompt cache
// holds; testdata/*.golden hold them.
//
// A Response's Usage is the tokens as the provider counted them. Where the
// provider also says what it charged, its Cost holds that: OpenRouter
// does, in every answer's usage (usage.cost, unasked). Anthropic's, OpenAI's
// and Ollama's usage holds tokens alone, and so a call of theirs is priced
// from the model facts by the caller.
//
// Where a call went wrong is told by its error: a *StatusError for the
// provider's refusal (a non-2xx status or an error event), wrapping
// ErrTooLong when the prompt was too long and ErrUnavailable when the model
// is overloaded (worth another model); ErrCut when the stream ended
// before the answer; ErrStalled when no byte came for the Request's Stall
// time; ErrTimeout when the whole call took longer than its Timeout, however
// many bytes (keep-alives, a trickle) came; ErrTooLarge when the answer grew
// past MaxAnswerBytes; ErrMalformed when the stream holds what no provider
// sends; ErrUnreachable when the proxy gave no answer at all (refused, reset).
//
// The stream is read a line at a time, no line longer than 1 MiB, each event
// decoded with one fastjson parser for the whole stream; the answer's text
// grows in one builder, and the fragments handed on are slices of it. Its
// text, thinking and calls' arguments are counted as they come, and the
// stream is ended once past MaxAnswerBytes rather than read on.
package model
