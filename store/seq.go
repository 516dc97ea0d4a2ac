package store

import "fmt"

// SeqOf returns the seq of the event in b without decoding the rest of it,
// and without allocating. Events written by AppendEvent start with their
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
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, fmt.Errorf("%w: not a JSON object", ErrBadEvent)
	}
	i++
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
		if string(key) == "seq" {
			n, rest, ok := parseSeq(b[i:])
			if !ok {
				return 0, fmt.Errorf("%w: seq is not a positive integer", ErrBadEvent)
			}
			j := skipSpace(rest, 0)
			if j >= len(rest) || (rest[j] != ',' && rest[j] != '}') {
				return 0, fmt.Errorf("%w: seq is not a positive integer", ErrBadEvent)
			}
			return n, nil
		}
		i = skipValue(b, i)
		if i < 0 {
			break
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return 0, fmt.Errorf("%w: no seq", ErrBadEvent)
		}
		break
	}
	return 0, fmt.Errorf("%w: malformed JSON object", ErrBadEvent)
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
