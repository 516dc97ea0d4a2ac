package scripted

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// answer is what one request gets, worked out before a byte is sent.
type answer struct {
	rule     *Rule // nil: the default answer
	id       string
	text     string
	thinking string
	calls    []call
	latency  time.Duration
	pause    time.Duration // between chunks
	chunks   int
	usage    Usage
}

// call is a tool call of an answer, with its id.
type call struct {
	id, name, args string
}

// plan works out the answer to req, whose body hashed to sum: the same
// script, request and seed give the same answer.
func plan(s *Script, req *request, sum uint64) *answer {
	a := &answer{chunks: 1}
	var seed uint64
	if s != nil {
		seed = s.Seed
		for i := range s.Rules {
			if s.Rules[i].matches(req.text, req.results, req.rounds) {
				a.rule = &s.Rules[i]
				break
			}
		}
	}
	rng := splitmix(sum ^ (seed * 0x9e3779b97f4a7c15))
	a.id = strconv.FormatUint(sum^seed, 16)
	r := a.rule
	if r == nil || (r.Text == "" && len(r.Calls) == 0 && r.Thinking == "") {
		a.text = defaultText(req.text)
	} else {
		a.text = strings.ReplaceAll(r.Text, "{text}", req.text)
		a.thinking = r.Thinking
	}
	if r != nil {
		if r.AnswerBytes > 0 {
			a.text = fill(a.text, rng.between(r.AnswerBytes, r.AnswerBytesMax), &rng)
		}
		a.latency = time.Duration(rng.between(r.LatencyMS, r.LatencyMSMax)) * time.Millisecond
		a.pause = time.Duration(r.ChunkMS) * time.Millisecond
		a.chunks = max(r.Chunks, 1)
		for i, c := range r.Calls {
			args := strings.TrimSpace(c.Args)
			if args == "" {
				args = "{}"
			}
			a.calls = append(a.calls, call{id: a.id + "_" + strconv.Itoa(i), name: c.Name, args: args})
		}
		a.usage = r.Usage
	}
	if a.usage.Input == 0 {
		a.usage.Input = int64(max(req.size/4, 1))
	}
	if a.usage.Output == 0 {
		n := len(a.text) + len(a.thinking)
		for _, c := range a.calls {
			n += len(c.name) + len(c.args)
		}
		a.usage.Output = int64(max(n/4, 1))
	}
	return a
}

// defaultText is the default answer: "ok: " and a short digest of the
// user's text, so a test can tell which message an answer is to.
func defaultText(text string) string {
	h := fnv.New32a()
	h.Write([]byte(text))
	var b [4 + 8]byte
	copy(b[:], "ok: ")
	const hex = "0123456789abcdef"
	s := h.Sum32()
	for i := 11; i >= 4; i-- {
		b[i] = hex[s&0xf]
		s >>= 4
	}
	return string(b[:])
}

// fillWords are the filler an answer is lengthened with.
var fillWords = [...]string{
	"the", "model", "answers", "with", "words", "of", "no", "meaning", "at", "all",
	"so", "a", "load", "test", "has", "something", "to", "carry", "and", "count",
}

// fill makes text exactly n bytes: cut at a character's start, or followed
// by filler words.
func fill(text string, n int, rng *splitmix) string {
	if len(text) >= n {
		for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		return text[:n]
	}
	var b strings.Builder
	b.Grow(n + 16)
	b.WriteString(text)
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fillWords[rng.next()%uint64(len(fillWords))])
	}
	return b.String()[:n]
}

// splitmix is a small deterministic generator (SplitMix64), seeded by the
// request, so draws need no lock and no allocation.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// between draws uniformly from [lo, hi]; hi at or below lo means lo.
func (s *splitmix) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + int(s.next()%uint64(hi-lo+1))
}

// pieces splits s into n pieces of about the same size, each starting at a
// character's start; fewer when s is short.
func pieces(s string, n int) []string {
	if n <= 1 || len(s) <= 1 {
		return []string{s}
	}
	n = min(n, len(s))
	out := make([]string, 0, n)
	start := 0
	for i := 1; i <= n; i++ {
		end := len(s) * i / n
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		if end > start {
			out = append(out, s[start:end])
			start = end
		}
	}
	return out
}
