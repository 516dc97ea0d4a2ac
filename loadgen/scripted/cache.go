package scripted

import (
	"bytes"
	"sync"
)

// The prompt cache. With Script.Cache, the server reports each answer's
// input as a provider with a prompt cache would: the part of the request
// that repeats the start of one of the last requests of the same
// conversation (OpenAI's and OpenRouter's prompt_cache_key; else the
// model) is read from the cache, the rest is input. In Anthropic's format
// the cache holds a prompt only up to a breakpoint (cache_control, which
// is not itself compared): what is read ends at an earlier request's
// breakpoint within the repeated part, and what the request marks past it
// is written; in the others, what is read is
// whole blocks of 128 tokens, and nothing is billed for writing. Tokens
// are bytes / 4, as for the rest of the usage.

// Limits of what the cache keeps.
const (
	cacheKept  = 4    // requests kept per conversation
	cacheKeys  = 1024 // conversations kept; past it, the cache starts empty
	cacheBlock = 512  // bytes of a block of 128 tokens
)

// promptCache holds the last requests of each conversation. The zero value
// is empty; it is safe for concurrent use.
type promptCache struct {
	mu   sync.Mutex
	kept map[string][]cached
}

// cached is a request the cache holds: its body (without breakpoints) and,
// in Anthropic's format, where its breakpoints were, the prefixes it wrote.
type cached struct {
	body  []byte
	marks []int
}

// marker is Anthropic's breakpoint, as a request carries it: not part of
// the prompt the cache compares.
var marker = []byte(`,"cache_control":{"type":"ephemeral"}`)

// use reports how many bytes of body were read from the cache and written
// to it, and keeps body for the requests after it. In Anthropic's format
// what is read is the longest prefix an earlier request wrote at one of its
// breakpoints that body repeats whole, as Anthropic looks back from a
// request's breakpoints for a prefix it holds.
func (c *promptCache) use(f format, key string, body []byte) (read, write int) {
	var marks []int // where body's breakpoints end, in body without them
	if f == anthropic {
		body, marks = unmarked(body)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kept[key] {
		same := commonPrefix(k.body, body)
		if f != anthropic {
			read = max(read, same/cacheBlock*cacheBlock)
			continue
		}
		for _, at := range k.marks {
			if at <= same {
				read = max(read, at)
			}
		}
	}
	if len(marks) > 0 {
		write = max(marks[len(marks)-1]-read, 0)
	}
	if c.kept == nil || len(c.kept) >= cacheKeys {
		c.kept = map[string][]cached{}
	}
	k := append(c.kept[key], cached{body, marks})
	if len(k) > cacheKept {
		k = k[1:]
	}
	c.kept[key] = k
	return read, write
}

// unmarked is body without its breakpoints, and where each was: the prompt
// up to there is what the cache holds for it.
func unmarked(body []byte) ([]byte, []int) {
	if !bytes.Contains(body, marker) {
		return body, nil
	}
	out := make([]byte, 0, len(body))
	var marks []int
	for {
		i := bytes.Index(body, marker)
		if i < 0 {
			return append(out, body...), marks
		}
		out = append(out, body[:i]...)
		marks = append(marks, len(out))
		body = body[i+len(marker):]
	}
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
