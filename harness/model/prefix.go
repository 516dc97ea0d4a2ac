package model

import "fmt"

// The wire formats a Prefix is kept in: the providers' names, each its own
// bytes for the same messages.
const (
	FormatAnthropic  = "anthropic"
	FormatOpenAI     = "openai"
	FormatOpenRouter = "openrouter"
	FormatOllama     = "ollama"
)

// Prefix is the wire bytes of a conversation's first messages in one
// provider's format, kept from one request to the next, so a client sends
// them as they are and encodes only the messages after them. Between two
// drop points a conversation's messages up to its last answer are the same
// from request to request: only what came since is encoded. A cache marker
// that moves each request (Anthropic's last breakpoint) is spliced into the
// kept bytes, never encoded with them.
//
// The bytes are those a fresh encoding makes, so a request sent with a
// Prefix is the same bytes as one sent without. Its zero value holds no
// message. A Prefix is not safe for concurrent use; a Request holding one
// must not be sent while it is extended.
type Prefix struct {
	format string
	n      int    // how many messages it holds
	wire   int    // how many messages of the wire format they made (a result is one in Chat Completions)
	bytes  []byte // each message preceded by a comma, none with a cache marker
	ends   []int  // where each message's bytes end in bytes
}

// Len is how many messages p holds.
func (p *Prefix) Len() int { return p.n }

// Size is how many bytes p holds.
func (p *Prefix) Size() int { return len(p.bytes) + 8*len(p.ends) }

// Reset empties p, keeping its memory for the next messages.
func (p *Prefix) Reset() {
	p.format, p.n, p.wire = "", 0, 0
	p.bytes, p.ends = p.bytes[:0], p.ends[:0]
}

// Extend makes p hold msgs in format, encoding only those past the ones p
// holds: msgs[:p.Len()] must be the messages p was extended with (in the
// same format; another format, or fewer messages, empties p first).
func (p *Prefix) Extend(format string, msgs []Message) error {
	if p.format != format || len(msgs) < p.n {
		p.Reset()
		p.format = format
	}
	for i := p.n; i < len(msgs); i++ {
		m := &msgs[i]
		var err error
		switch format {
		case FormatAnthropic:
			p.bytes = append(p.bytes, ',')
			p.bytes, err = appendAnthropicMessage(p.bytes, m, false)
			p.wire++
		case FormatOpenAI, FormatOpenRouter, FormatOllama:
			// The messages before are one at least: each is written with
			// its comma, which appendTo leaves off when nothing precedes.
			p.bytes, p.wire, err = appendChatMessage(p.bytes, format, m, p.wire+1)
			p.wire--
		default:
			p.Reset()
			return fmt.Errorf("model: no wire format %q", format)
		}
		if err != nil {
			p.Reset()
			return messageError(format, i, err)
		}
		p.ends = append(p.ends, len(p.bytes))
		p.n++
	}
	return nil
}

// kept returns the prefix req may be sent with in format: its Prefix when
// it is in that format and holds no more than req's messages, else nil.
func kept(req *Request, format string) *Prefix {
	if p := req.Prefix; p != nil && p.format == format && p.n > 0 && p.n <= len(req.Messages) {
		return p
	}
	return nil
}

// appendTo appends p's messages as they go after others (more) or first,
// and Anthropic's moving breakpoint on message mark when p holds it: its
// last block's end, before the "}]}" that closes it.
func (p *Prefix) appendTo(dst []byte, more bool, mark int) []byte {
	b := p.bytes
	if !more {
		b = b[1:]
	}
	if mark < 0 || mark >= p.n {
		return append(dst, b...)
	}
	at := p.ends[mark] - len(`}]}`) - (len(p.bytes) - len(b))
	dst = append(dst, b[:at]...)
	dst = append(dst, cacheControl...)
	return append(dst, b[at:]...)
}
