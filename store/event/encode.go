package event

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// TimeLayout is how an event's time is written: RFC 3339 in UTC with all
// nine digits of the nanoseconds, so every time has the same width.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Append appends e as one JSON object, without a newline, to dst and
// returns the extended buffer. Keys come in a fixed order, seq first, so a
// store can read the seq without decoding the event; empty fields are left
// out; Extra comes last, as it was read.
func Append(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.UTC().AppendFormat(dst, TimeLayout)
	dst = append(dst, '"')
	dst = appendStringKey(dst, "type", e.Type)
	dst = appendStringKey(dst, "thread", e.Thread)
	dst = appendStringKey(dst, "id", e.ID)
	if e.From != (Sender{}) {
		dst = append(dst, `,"from":{"id":`...)
		dst = AppendString(dst, e.From.ID)
		dst = append(dst, `,"name":`...)
		dst = AppendString(dst, e.From.Name)
		dst = append(dst, '}')
	}
	if e.Owner {
		dst = append(dst, `,"owner":true`...)
	}
	dst = appendStringKey(dst, "connection", e.Connection)
	dst = appendStringKey(dst, "head", e.Head)
	dst = appendStringKey(dst, "text", e.Text)
	if len(e.Thinking) > 0 {
		dst = append(dst, `,"thinking":`...)
		dst = append(dst, e.Thinking...)
	}
	dst = appendCalls(dst, e.Calls)
	dst = appendStringKey(dst, "model", e.Model)
	dst = appendStringKey(dst, "provider", e.Provider)
	dst = appendStringKey(dst, "response_id", e.ResponseID)
	dst = appendUsage(dst, e.Usage)
	if e.LatencyMS != 0 {
		dst = append(dst, `,"latency_ms":`...)
		dst = strconv.AppendInt(dst, e.LatencyMS, 10)
	}
	// A cost with a source is written even when 0: a provider that
	// reported charging nothing said so.
	cost := e.Cost
	if math.IsNaN(cost) || math.IsInf(cost, 0) {
		cost = 0
	}
	if cost != 0 || e.CostSource != "" {
		dst = append(dst, `,"cost":`...)
		dst = strconv.AppendFloat(dst, cost, 'f', -1, 64)
	}
	dst = appendStringKey(dst, "cost_source", e.CostSource)
	if w := e.Window; w != nil {
		dst = append(dst, `,"window":{"start":`...)
		dst = strconv.AppendInt(dst, w.Start, 10)
		dst = append(dst, `,"start_time":"`...)
		dst = w.StartTime.UTC().AppendFormat(dst, TimeLayout)
		dst = append(dst, `","tokens_before":`...)
		dst = strconv.AppendInt(dst, w.TokensBefore, 10)
		dst = append(dst, '}')
	}
	dst = appendStringKey(dst, "call_id", e.CallID)
	dst = appendStringKey(dst, "name", e.Name)
	dst = appendStringKey(dst, "error", e.Error)
	if e.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	if e.Through != 0 {
		dst = append(dst, `,"through":`...)
		dst = strconv.AppendInt(dst, e.Through, 10)
	}
	if len(e.Extra) > 0 {
		dst = append(dst, ',')
		dst = append(dst, e.Extra...)
	}
	return append(dst, '}')
}

// appendCalls appends an answer's calls, when it has any.
func appendCalls(dst []byte, calls []Call) []byte {
	if len(calls) > 0 {
		dst = append(dst, `,"calls":[`...)
		for i := range calls {
			c := &calls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = AppendString(dst, c.ID)
			dst = append(dst, `,"name":`...)
			dst = AppendString(dst, c.Name)
			dst = append(dst, `,"args":`...)
			if len(c.Args) == 0 {
				dst = append(dst, "{}"...)
			} else {
				dst = append(dst, c.Args...)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return dst
}

// appendUsage appends the usage a provider reported, when it reported any.
func appendUsage(dst []byte, u Usage) []byte {
	if u != (Usage{}) {
		dst = append(dst, `,"usage":{"input":`...)
		dst = strconv.AppendInt(dst, u.Input, 10)
		dst = append(dst, `,"output":`...)
		dst = strconv.AppendInt(dst, u.Output, 10)
		dst = append(dst, `,"cache_read":`...)
		dst = strconv.AppendInt(dst, u.CacheRead, 10)
		dst = append(dst, `,"cache_write":`...)
		dst = strconv.AppendInt(dst, u.CacheWrite, 10)
		dst = append(dst, '}')
	}
	return dst
}

func appendStringKey(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, '"', ':')
	return AppendString(dst, s)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, and
// U+2028 and U+2029 are escaped so the line stays one line everywhere.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendTime is here so the layout is written in one place.
func parseTime(b []byte) (time.Time, bool) {
	// Fast path: exactly TimeLayout in UTC, "2006-01-02T15:04:05.000000000Z".
	if len(b) == 30 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' &&
		b[16] == ':' && b[19] == '.' && b[29] == 'Z' {
		year, ok1 := digits(b[0:4])
		month, ok2 := digits(b[5:7])
		day, ok3 := digits(b[8:10])
		hour, ok4 := digits(b[11:13])
		min, ok5 := digits(b[14:16])
		sec, ok6 := digits(b[17:19])
		nsec, ok7 := digits(b[20:29])
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && month >= 1 && month <= 12 &&
			day >= 1 && day <= 31 && hour < 24 && min < 60 && sec < 60 {
			t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
			if t.Day() == day {
				return t, true
			}
		}
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
