// Package scripted is the scripted model: a real HTTP server speaking the
// providers' wire formats (Anthropic's Messages API, the Chat Completions
// API of OpenAI and OpenRouter, OpenAI's Responses API, and Ollama's
// /api/chat and /api/show), streamed or not, answering as a script says,
// deterministically. It stands where LNK_MODEL_PROXY points (paths under
// /anthropic, /openai, /openrouter, /ollama) or where a provider's override
// points (paths at /v1/… or /api/…), for tests and load.
//
// A script is an ordered list of rules; the first whose match is in the
// last user text (and whose results filter fits) answers:
//
//	seed = 7
//	cache = true            # usage as a provider's prompt cache would report it (cache.go)
//
//	[[rule]]
//	match = "weather"
//	results = "no"          # only before the tool results come back
//	text = "Let me look."
//	chunks = 3
//	[[rule.call]]
//	name = "weather__now"
//	args = '{"city":"Oslo"}'
//
//	[[rule]]
//	match = "weather"
//	round = 1               # only after the first round's results; 2 after the second
//	results = "yes"
//	text = "Sunny. You asked: {text}"
//	latency_ms = 20
//	latency_ms_max = 80     # drawn uniformly, from the seed and the request
//	[rule.usage]
//	cache_read = 1200
//	cost = 0.0042           # USD, reported only in OpenRouter's format, as its usage.cost
//
//	[[rule]]
//	match = "huge"
//	refuse = true           # too long, in each provider's words, status 400
//
//	[[rule]]
//	match = "busy"
//	status = 429
//	retry_after = 3
//
//	[[rule]]
//	match = "hang"
//	stall = true            # also: cut = true; either after after_chunks pieces
//	after_chunks = 2
//	ping_ms = 50            # while stalled, a keep-alive every 50 ms
//
//	[[rule]]
//	match = "slow"
//	trickle_ms = 100        # the answer one byte at a time, 100 ms apart
//
//	[[rule]]
//	match = "any"
//	answer_bytes = 200
//	answer_bytes_max = 2000
//
//	[[model]]               # what /api/show says of a model; others are not found
//	name = "qwen3:8b"
//	context_length = 40960  # the window it was trained for
//	num_ctx = 8192          # the one it is set to run with, in its parameters
//
// With no script, or where no rule matches, the answer is "ok: " and a short
// digest of the last user text, at once. Usage reports the request's bytes
// / 4 as input and the answer's bytes / 4 as output unless the rule says.
//
// The server keeps the last 100 request bodies for tests: Requests, and GET
// /_scripted/requests as JSON lines.
//
// Example starts one on loopback with a script of one rule and sends it a
// request in Anthropic's format that the rule answers, and one it does
// not.
package scripted
