/*
Package event is one event of a conversation: its type, how it is written
and read, and how a store reads its seq without decoding it. The stores,
the turn and the model clients import it; it imports nothing else of Link
Harness's.

# The format

An event is one JSON object (API.md, "Events") on one line, at most
MaxBytes bytes. Append writes its keys in a fixed order, seq first:

	{"seq":12,"time":"2026-12-02T10:45:01.123456789Z","type":"answer",
	 "thread":…,"id":…,"from":{"id":…,"name":…},"owner":true,"connection":…,
	 "head":…,"text":…,"thinking":[…],"calls":[{"id":…,"name":…,"args":{…}}],
	 "model":…,"provider":…,"response_id":…,
	 "usage":{"input":…,"output":…,"cache_read":…,"cache_write":…},
	 "latency_ms":…,"cost":…,"cost_source":…,
	 "window":{"start":…,"start_time":…,"tokens_before":…},
	 "call_id":…,"name":…,"error":…,"truncated":true,"through":…, extra keys}

An empty field is left out, but for a cost with a source (cost_source),
written even when 0: a provider that reported charging nothing said so. An
answer with a cost and no source was written before sources were kept and
reads as priced. The time is TimeLayout: RFC 3339 in UTC with all nine
digits of the nanoseconds, so every time has the same width. Strings are
written by AppendString: invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029
are escaped so the line stays one line everywhere. Thinking and a call's
args are raw JSON, kept as they were given. Keys the schema does not name
are kept, as read, in Event.Extra and written back after the others.
Because seq comes first, SeqOf reads it without looking further, and
MessageID tells a message and reads its id after a few bytes.

# Two decoders

A Decoder decodes in one of two ways, and the caller does not choose:

  - In one pass over the bytes (decodefast.go), for events as Append writes
    them and any like them: no thinking, no calls, no unknown keys, strings
    whose escapes it undoes as fastjson does. This is nearly every event a
    turn reads (a window is read at every turn, and its messages, answers
    and results are plain), and it allocates only the strings it hands out.
  - Through fastjson's tree (decode.go), for anything else: thinking and
    calls kept raw, unknown keys kept in Extra, events written by hand or by
    another program, and every malformed input, where it says what is wrong.

The one-pass decoder declines, rather than guesses, on anything it does not
take exactly as the tree takes it, and the tree then starts again from the
start. The tree alone would be correct, but it measured half as slow again
on a typical answer (BENCHMARKS.md), on the path every turn takes; the
one-pass decoder alone would have to become a whole JSON parser. Their agreement
is tested, not assumed: FuzzDecodersAgree feeds both the same bytes and
requires the same Event whenever the one-pass decoder takes them.

# Errors

Every error of this package wraps ErrInvalid. It lives here, not in package
store, because the codec is below the store (a store imports event, never
the reverse); store.ErrInvalid is the same value, so a caller's
errors.Is(err, store.ErrInvalid) holds for a decoding error as for a store
refusing an Append.
*/
package event
