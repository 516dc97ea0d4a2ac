package event

import (
	"bytes"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson/fastfloat"
)

// decodeFast decodes an event as Append writes it, and any like it, in
// one pass over its bytes, without building fastjson's tree. It reports
// false for anything else: thinking, calls, keys it does not know, escapes
// it does not undo the same way, values of another type, JSON it does not
// accept. Decode then starts again through fastjson, which says what is
// wrong. Whatever it decodes, Decode through fastjson decodes the same
// (FuzzDecodersAgree).
func (d *Decoder) decodeFast(b []byte, e *Event) bool {
	i, ok := fastObject(b, skipSpace(b, 0), func(key []byte, b []byte, i int) (int, uint8, bool) {
		next, ok := d.fastValue(b, i, key, e)
		return next, 0, ok // a key written twice: the last is read, as fastjson's Visit reads it
	})
	return ok && skipSpace(b, i) == len(b)
}

// fastValue reads the value of key at b[i] into e.
func (d *Decoder) fastValue(b []byte, i int, key []byte, e *Event) (int, bool) {
	var ok bool
	switch string(key) {
	case "seq":
		if e.Seq, i, ok = fastInt(b, i); ok && e.Seq <= 0 {
			return 0, false
		}
	case "time":
		e.Time, i, ok = fastTime(b, i)
	case "type":
		var s []byte
		if s, i, ok = fastBytes(b, i); ok {
			e.Type = eventType(s)
		}
	case "thread":
		e.Thread, i, ok = d.fastString(b, i)
	case "id":
		e.ID, i, ok = d.fastString(b, i)
	case "from":
		i, ok = d.fastSender(b, i, &e.From)
	case "owner":
		e.Owner, i, ok = fastBool(b, i)
	case "connection":
		e.Connection, i, ok = d.fastString(b, i)
	case "head":
		e.Head, i, ok = d.fastString(b, i)
	case "text":
		e.Text, i, ok = d.fastString(b, i)
	case "model":
		e.Model, i, ok = d.fastString(b, i)
	case "provider":
		e.Provider, i, ok = d.fastString(b, i)
	case "response_id":
		e.ResponseID, i, ok = d.fastString(b, i)
	case "usage":
		i, ok = fastUsage(b, i, &e.Usage)
	case "latency_ms":
		e.LatencyMS, i, ok = fastInt(b, i)
	case "cost_source":
		var s []byte
		if s, i, ok = fastBytes(b, i); ok {
			e.CostSource = costSource(s)
		}
	case "cost":
		e.Cost, i, ok = fastCost(b, i)
	case "window":
		e.Window = new(Window)
		i, ok = fastWindow(b, i, e.Window)
	case "call_id":
		e.CallID, i, ok = d.fastString(b, i)
	case "name":
		e.Name, i, ok = d.fastString(b, i)
	case "error":
		e.Error, i, ok = d.fastString(b, i)
	case "truncated":
		e.Truncated, i, ok = fastBool(b, i)
	case "through":
		e.Through, i, ok = fastInt(b, i)
	}
	return i, ok
}

// fastSender reads a sender object at b[i] into f.
func (d *Decoder) fastSender(b []byte, i int, f *Sender) (int, bool) {
	return fastObject(b, i, func(key []byte, b []byte, i int) (next int, bit uint8, ok bool) {
		switch string(key) {
		case "id":
			f.ID, next, ok = d.fastString(b, i)
			return next, 1, ok
		case "name":
			f.Name, next, ok = d.fastString(b, i)
			return next, 2, ok
		}
		return 0, 0, false
	})
}

// fastUsage reads a usage object at b[i] into u.
func fastUsage(b []byte, i int, u *Usage) (int, bool) {
	return fastObject(b, i, func(key []byte, b []byte, i int) (int, uint8, bool) {
		switch string(key) {
		case "input":
			return fastIntField(b, i, &u.Input, 1)
		case "output":
			return fastIntField(b, i, &u.Output, 2)
		case "cache_read":
			return fastIntField(b, i, &u.CacheRead, 4)
		case "cache_write":
			return fastIntField(b, i, &u.CacheWrite, 8)
		}
		return 0, 0, false
	})
}

// fastWindow reads a window object at b[i] into w.
func fastWindow(b []byte, i int, w *Window) (int, bool) {
	return fastObject(b, i, func(key []byte, b []byte, i int) (next int, bit uint8, ok bool) {
		switch string(key) {
		case "start":
			return fastIntField(b, i, &w.Start, 1)
		case "tokens_before":
			return fastIntField(b, i, &w.TokensBefore, 2)
		case "start_time":
			w.StartTime, next, ok = fastTime(b, i)
			return next, 4, ok
		}
		return 0, 0, false
	})
}

// fastIntField reads an integer at b[i] into *v, as a field of an object
// whose bit is bit (see fastObject).
func fastIntField(b []byte, i int, v *int64, bit uint8) (int, uint8, bool) {
	n, next, ok := fastInt(b, i)
	*v = n
	return next, bit, ok
}

// fastCost reads the cost, a number, at b[i].
func fastCost(b []byte, i int) (float64, int, bool) {
	n, next, ok := numberToken(b, i)
	if !ok {
		return 0, 0, false
	}
	// fastjson's own parse, on the bytes where they are: a string made of
	// them would be the one allocation of a plain answer. Nothing keeps
	// it: an error is dropped.
	cost, err := fastfloat.Parse(unsafe.String(unsafe.SliceData(n), len(n)))
	return cost, next, err == nil
}

// fastObject reads an object at b[i], handing each key to fn, which reads
// its value and returns the key's bit. A key written twice whose bit is not
// zero is refused: fastjson's Get reads the first, not the last.
func fastObject(b []byte, i int, fn func(key []byte, b []byte, i int) (next int, bit uint8, ok bool)) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	var seen uint8
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := fastBytes(b, i)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		var bit uint8
		if i, bit, ok = fn(key, b, skipSpace(b, i+1)); !ok || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// numberToken returns the bytes of a number at b[i], as fastjson delimits
// one, and no more.
func numberToken(b []byte, i int) ([]byte, int, bool) {
	j := i
	for j < len(b) {
		c := b[j]
		if (c >= '0' && c <= '9') || c == '.' || c == '-' || c == 'e' || c == 'E' || c == '+' {
			j++
			continue
		}
		break
	}
	if j == i {
		return nil, 0, false
	}
	return b[i:j], j, true
}

// fastInt reads an integer of at most 18 digits, a minus before it or not,
// which fastfloat.ParseInt64 (fastjson's) reads the same; any other number
// is left to fastjson.
func fastInt(b []byte, i int) (int64, int, bool) {
	n, j, ok := numberToken(b, i)
	if !ok {
		return 0, 0, false
	}
	neg := n[0] == '-'
	if neg {
		n = n[1:]
	}
	if len(n) == 0 || len(n) > 18 {
		return 0, 0, false
	}
	var v int64
	for _, c := range n {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, j, true
}

func fastBool(b []byte, i int) (bool, int, bool) {
	switch {
	case len(b)-i >= 4 && string(b[i:i+4]) == "true":
		return true, i + 4, true
	case len(b)-i >= 5 && string(b[i:i+5]) == "false":
		return false, i + 5, true
	}
	return false, 0, false
}

func fastTime(b []byte, i int) (t time.Time, next int, ok bool) {
	s, j, ok := fastBytes(b, i)
	if !ok {
		return t, 0, false
	}
	t, ok = parseTime(s)
	return t, j, ok
}

// fastBytes returns the bytes of a string at b[i] that needs no
// unescaping, without copying them. Control characters are taken as they
// are, as fastjson takes them.
func fastBytes(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	q := bytes.IndexByte(b[i+1:], '"')
	if q < 0 {
		return nil, 0, false
	}
	s := b[i+1 : i+1+q]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	return s, i + 2 + q, true
}

// fastString reads a string at b[i], undoing the escapes fastjson undoes
// the same way; a surrogate or an escape it keeps as written is refused.
func (d *Decoder) fastString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	j := i + 1
	out := d.scratch[:0]
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return "", 0, false
		}
		if e := bytes.IndexByte(b[j:j+k], '\\'); e >= 0 {
			k = e
		}
		if b[j+k] == '"' {
			var s string
			if len(out) == 0 && j == i+1 {
				s = string(b[j : j+k]) // no escape: the common case
			} else {
				out = append(out, b[j:j+k]...)
				s = string(out)
				d.scratch = out[:0]
			}
			return s, j + k + 1, true
		}
		out = append(out, b[j:j+k]...)
		j += k // at the backslash
		if j+1 >= len(b) {
			return "", 0, false
		}
		switch b[j+1] {
		case '"', '\\', '/':
			out = append(out, b[j+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, j+2)
			if !ok || utf16.IsSurrogate(r) {
				return "", 0, false
			}
			out = utf8.AppendRune(out, r)
			j += 4
		default:
			return "", 0, false
		}
		j += 2
	}
}

func hex4(b []byte, i int) (rune, bool) {
	if len(b)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
