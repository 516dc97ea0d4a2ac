package event

import (
	"bytes"
	"fmt"

	"github.com/valyala/fastjson"
)

// SeqOf returns the seq of the event in b without decoding the rest of it,
// and without allocating. Events written by Append start with their
// seq, which is read at once; any other order of keys is scanned for it.
func SeqOf(b []byte) (int64, error) {
	const prefix = `{"seq":`
	if len(b) > len(prefix) && string(b[:len(prefix)]) == prefix {
		if n, rest, ok := parseSeq(b[len(prefix):]); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
			return n, nil
		}
	}
	return scanSeq(b)
}

// parseSeq reads a positive decimal integer of at most 18 digits.
func parseSeq(b []byte) (n int64, rest []byte, ok bool) {
	i := 0
	for i < len(b) && i < 19 && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 || i > 18 || (b[0] == '0') {
		return 0, b, false
	}
	return n, b[i:], true
}

// scanSeq walks the top level of one JSON object for the key "seq",
// skipping every other value whole.
func scanSeq(b []byte) (int64, error) {
	var (
		n     int64
		found bool
		bad   bool
	)
	err := scanObject(b, func(key, value []byte) bool {
		if string(key) != "seq" {
			return true
		}
		found = true
		var (
			rest []byte
			ok   bool
		)
		n, rest, ok = parseSeq(value)
		bad = !ok || len(rest) > 0
		return false
	})
	switch {
	case err != nil:
		return 0, err
	case bad:
		return 0, fmt.Errorf("%w: seq is not a positive integer", ErrInvalid)
	case !found:
		return 0, fmt.Errorf("%w: no seq", ErrInvalid)
	}
	return n, nil
}

// MessageID tells whether the event in b is a message and returns its "id"
// as written, escapes and all, without its quotes: without decoding the
// rest and without allocating. Events written by Append name their
// type near the start, so any other event is told apart after a few bytes.
// An id that is missing, or not a string, is returned empty; a key written
// twice is read the first time; the event is not checked further. Unescape
// the id with UnquoteRaw, or compare it with RawIs.
func MessageID(b []byte) (id []byte, message bool, err error) {
	typed, found := false, false
	err = scanObject(b, func(key, value []byte) bool {
		switch {
		case string(key) == "type" && !typed:
			typed = true
			message = RawIs(rawString(value), TypeMessage)
		case string(key) == "id" && !found:
			found = true
			id = rawString(value)
		}
		return !typed || (message && !found)
	})
	if !message {
		id = nil
	}
	return id, message, err
}

// rawString returns a JSON string value's bytes without its quotes, or nil
// for any other value.
func rawString(v []byte) []byte {
	if len(v) < 2 || v[0] != '"' {
		return nil
	}
	return v[1 : len(v)-1]
}

// RawIs tells whether the bytes of a JSON string, as MessageID returns
// them, unescape to s. Without a backslash they are compared as they are.
func RawIs(raw []byte, s string) bool {
	if raw == nil {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == s
	}
	u, err := UnquoteRaw(raw)
	return err == nil && u == s
}

// UnquoteRaw unescapes the bytes of a JSON string returned by MessageID,
// as Decode does.
func UnquoteRaw(raw []byte) (string, error) {
	b := make([]byte, 0, len(raw)+2)
	b = append(append(append(b, '"'), raw...), '"')
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	s, err := stringValue(v)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return s, nil
}

// scanObject walks the top level of one JSON object, handing fn each key
// (as written) and the bytes of its value, until fn returns false or the
// object ends. Values are skipped whole, not checked.
func scanObject(b []byte, fn func(key, value []byte) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrInvalid)
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			break
		}
		kstart := i + 1
		i = skipString(b, i)
		if i < 0 {
			break
		}
		key := b[kstart : i-1]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			break
		}
		i = skipSpace(b, i+1)
		vstart := i
		i = skipValue(b, i)
		if i < 0 || i == vstart {
			break
		}
		if !fn(key, b[vstart:i]) {
			return nil
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return nil
		}
		break
	}
	return fmt.Errorf("%w: malformed JSON object", ErrInvalid)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"',
// or -1 when it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}
