package event

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/valyala/fastjson"
)

// Decoder decodes events. It reuses one parser for every event, so decoding
// allocates only the strings it hands out. The zero value is ready to use;
// a Decoder is not safe for concurrent use.
type Decoder struct {
	p       fastjson.Parser
	scratch []byte // where a string's escapes are undone
}

// Decode decodes one event from b into e, overwriting it and reusing the
// capacity of its Calls, Thinking and Extra: copy what must outlive the next
// Decode into the same Event. e holds no reference to b.
func (d *Decoder) Decode(b []byte, e *Event) error {
	e.Reset()
	if len(b) > MaxBytes {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalid, len(b), MaxBytes)
	}
	if !d.decodeFast(b, e) {
		e.Reset()
		if err := d.decodeTree(b, e); err != nil {
			return err
		}
	}
	if e.Seq <= 0 {
		return fmt.Errorf("%w: no seq", ErrInvalid)
	}
	if e.Type == "" {
		return fmt.Errorf("%w: seq %d: no type", ErrInvalid, e.Seq)
	}
	return nil
}

// decodeTree decodes b through fastjson's tree, every key of it.
func (d *Decoder) decodeTree(b []byte, e *Event) error {
	v, err := d.p.ParseBytes(b)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	o, err := v.Object()
	if err != nil {
		return fmt.Errorf("%w: not a JSON object", ErrInvalid)
	}
	var bad error
	o.Visit(func(key []byte, v *fastjson.Value) {
		if bad == nil {
			bad = decodeKey(e, key, v)
		}
	})
	if bad != nil {
		return bad
	}
	// Values kept raw are written back as read, so they must be valid JSON
	// as JSON's grammar says, which the parser does not hold them to.
	if len(e.Extra) > 0 || len(e.Thinking) > 0 || len(e.Calls) > 0 {
		if !json.Valid(b) {
			return fmt.Errorf("%w: not valid JSON", ErrInvalid)
		}
	}
	return nil
}

func decodeKey(e *Event, key []byte, v *fastjson.Value) error {
	var err error
	switch string(key) {
	case "seq":
		e.Seq, err = v.Int64()
		if err == nil && e.Seq <= 0 {
			return fmt.Errorf("%w: seq %d: a seq starts at 1", ErrInvalid, e.Seq)
		}
	case "time":
		e.Time, err = timeValue(v)
	case "type":
		var b []byte
		if b, err = v.StringBytes(); err == nil {
			e.Type = eventType(b)
		}
	case "thread":
		e.Thread, err = stringValue(v)
	case "id":
		e.ID, err = stringValue(v)
	case "from":
		err = decodeFrom(&e.From, v)
	case "owner":
		e.Owner, err = v.Bool()
	case "connection":
		e.Connection, err = stringValue(v)
	case "head":
		e.Head, err = stringValue(v)
	case "text":
		e.Text, err = stringValue(v)
	case "thinking":
		e.Thinking = v.MarshalTo(e.Thinking[:0])
	case "calls":
		err = decodeCalls(e, v)
	case "model":
		e.Model, err = stringValue(v)
	case "provider":
		e.Provider, err = stringValue(v)
	case "response_id":
		e.ResponseID, err = stringValue(v)
	case "usage":
		err = decodeUsage(&e.Usage, v)
	case "latency_ms":
		e.LatencyMS, err = v.Int64()
	case "cost":
		e.Cost, err = v.Float64()
	case "cost_source":
		var b []byte
		if b, err = v.StringBytes(); err == nil {
			e.CostSource = costSource(b)
		}
	case "window":
		e.Window, err = decodeWindow(v)
	case "call_id":
		e.CallID, err = stringValue(v)
	case "name":
		e.Name, err = stringValue(v)
	case "error":
		e.Error, err = stringValue(v)
	case "truncated":
		e.Truncated, err = v.Bool()
	case "through":
		e.Through, err = v.Int64()
	default:
		if len(e.Extra) > 0 {
			e.Extra = append(e.Extra, ',')
		}
		e.Extra = appendKey(e.Extra, key)
		e.Extra = append(e.Extra, ':')
		e.Extra = v.MarshalTo(e.Extra)
	}
	if err != nil {
		return fmt.Errorf("%w: key %q: %v", ErrInvalid, key, err)
	}
	return nil
}

// eventType returns the constant for the known types, so they cost no
// allocation.
func eventType(b []byte) string {
	switch string(b) {
	case TypeMessage:
		return TypeMessage
	case TypeAnswer:
		return TypeAnswer
	case TypeResult:
		return TypeResult
	case TypeSummary:
		return TypeSummary
	}
	return string(b)
}

// costSource returns the constant for the known sources, so they cost no
// allocation.
func costSource(b []byte) string {
	switch string(b) {
	case CostReported:
		return CostReported
	case CostPriced:
		return CostPriced
	}
	return string(b)
}

func stringValue(v *fastjson.Value) (string, error) {
	b, err := v.StringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func timeValue(v *fastjson.Value) (time.Time, error) {
	b, err := v.StringBytes()
	if err != nil {
		return time.Time{}, err
	}
	t, ok := parseTime(b)
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", b)
	}
	return t, nil
}

func decodeFrom(s *Sender, v *fastjson.Value) error {
	o, err := v.Object()
	if err != nil {
		return err
	}
	if f := o.Get("id"); f != nil {
		if s.ID, err = stringValue(f); err != nil {
			return fmt.Errorf("id: %v", err)
		}
	}
	if f := o.Get("name"); f != nil {
		if s.Name, err = stringValue(f); err != nil {
			return fmt.Errorf("name: %v", err)
		}
	}
	return nil
}

func decodeCalls(e *Event, v *fastjson.Value) error {
	a, err := v.Array()
	if err != nil {
		return err
	}
	for i, cv := range a {
		o, err := cv.Object()
		if err != nil {
			return fmt.Errorf("call %d: not an object", i)
		}
		var c Call
		if f := o.Get("id"); f != nil {
			if c.ID, err = stringValue(f); err != nil {
				return fmt.Errorf("call %d: id: %v", i, err)
			}
		}
		if f := o.Get("name"); f != nil {
			if c.Name, err = stringValue(f); err != nil {
				return fmt.Errorf("call %d: name: %v", i, err)
			}
		}
		if f := o.Get("args"); f != nil {
			c.Args = f.MarshalTo(nil)
		}
		e.Calls = append(e.Calls, c)
	}
	return nil
}

func decodeUsage(u *Usage, v *fastjson.Value) error {
	o, err := v.Object()
	if err != nil {
		return err
	}
	for _, f := range [...]struct {
		key string
		n   *int64
	}{{"input", &u.Input}, {"output", &u.Output}, {"cache_read", &u.CacheRead}, {"cache_write", &u.CacheWrite}} {
		if x := o.Get(f.key); x != nil {
			if *f.n, err = x.Int64(); err != nil {
				return fmt.Errorf("%s: %v", f.key, err)
			}
		}
	}
	return nil
}

func decodeWindow(v *fastjson.Value) (*Window, error) {
	o, err := v.Object()
	if err != nil {
		return nil, err
	}
	w := new(Window)
	if x := o.Get("start"); x != nil {
		if w.Start, err = x.Int64(); err != nil {
			return nil, fmt.Errorf("start: %v", err)
		}
	}
	if x := o.Get("start_time"); x != nil {
		if w.StartTime, err = timeValue(x); err != nil {
			return nil, fmt.Errorf("start_time: %v", err)
		}
	}
	if x := o.Get("tokens_before"); x != nil {
		if w.TokensBefore, err = x.Int64(); err != nil {
			return nil, fmt.Errorf("tokens_before: %v", err)
		}
	}
	return w, nil
}

// appendKey appends key as a JSON string; keys are almost always plain, so
// the common case copies bytes and allocates nothing.
func appendKey(dst, key []byte) []byte {
	for _, c := range key {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return AppendString(dst, string(key))
		}
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"')
}
