package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// OpenRouter relays each model's reasoning in the model's own shape, as
// reasoning_details: reasoning.text (text, perhaps a signature),
// reasoning.summary (summary) and reasoning.encrypted (data), each with its
// type, id, format and index. A stream sends them in pieces, each naming
// its detail by index. The pieces of one index are joined into one detail,
// kept in the answer's thinking as {"openrouter":{…}}, and sent back to
// OpenRouter alone, as the assistant message's reasoning_details: its
// signatures and encrypted data hold only where they came from, and no
// other provider reads the key.

// openRouterKey is the key that marks a thinking block as OpenRouter's.
const openRouterKey = "openrouter"

// The fields of a reasoning detail that came, in reasoningDetail.has.
const (
	hasType = 1 << iota
	hasID
	hasFormat
	hasIndex
	hasText
	hasSummary
	hasData
	hasSignature
)

// reasoningDetail is one of OpenRouter's reasoning details being streamed.
// Its text, summary, data and signature run on from piece to piece; its
// type, id and format are as first sent. A null is taken as no value; keys
// it has no field for are kept as first sent, null or not.
type reasoningDetail struct {
	has                      uint8 // hasType …: the fields that came with a value
	typ, id, format          string
	index                    int
	text, summary, data, sig []byte
	extra                    []byte   // the other keys, `,"key":value` each
	extraKeys                []string // their names
}

// reasoning takes in a delta's reasoning: its reasoning_details, and its
// reasoning text, which is kept only while no detail has come (it is the
// details' text again).
func (d *openAIStream) reasoning(delta *fastjson.Value) error {
	for _, p := range delta.GetArray("reasoning_details") {
		if err := d.detailPiece(p); err != nil {
			return err
		}
	}
	if len(d.details) > 0 {
		d.reasoningText = nil
		return nil
	}
	t := delta.GetStringBytes("reasoning")
	if err := d.room.take(len(t)); err != nil {
		return err
	}
	if len(d.reasoningText)+len(t) > maxLine {
		return fmt.Errorf("%w: reasoning over %d bytes", ErrMalformed, maxLine)
	}
	d.reasoningText = append(d.reasoningText, t...)
	return nil
}

// detailPiece adds a piece of a reasoning detail to the detail its index
// names. A piece without an index goes on the last detail when it is of the
// same type, else starts a new one.
func (d *openAIStream) detailPiece(p *fastjson.Value) error {
	o, err := p.Object()
	if err != nil {
		return fmt.Errorf("%w: a reasoning detail is not an object", ErrMalformed)
	}
	i := len(d.details)
	indexed := false
	if ix := o.Get("index"); ix != nil && ix.Type() != fastjson.TypeNull {
		if i, err = ix.Int(); err != nil {
			return fmt.Errorf("%w: reasoning detail index %s", ErrMalformed, ix)
		}
		indexed = true
	} else if last := len(d.details) - 1; last >= 0 && d.details[last].typ == string(o.Get("type").GetStringBytes()) {
		i = last
	}
	if i < 0 || i >= maxBlocks {
		return fmt.Errorf("%w: reasoning detail index %d", ErrMalformed, i)
	}
	for len(d.details) <= i {
		d.details = append(d.details, reasoningDetail{})
	}
	r := &d.details[i]
	if indexed {
		r.has |= hasIndex
		r.index = i
	}
	var bad error
	o.Visit(func(key []byte, v *fastjson.Value) {
		if bad == nil && v.Type() == fastjson.TypeString {
			bad = d.room.take(len(v.GetStringBytes()))
		}
		if bad == nil {
			bad = r.add(key, v)
		}
	})
	return bad
}

// add takes in one key of a piece.
func (r *reasoningDetail) add(key []byte, v *fastjson.Value) error {
	var s *string
	var b *[]byte
	var bit uint8
	switch string(key) {
	case "index":
		return nil // read by detailPiece
	case "type":
		s, bit = &r.typ, hasType
	case "id":
		s, bit = &r.id, hasID
	case "format":
		s, bit = &r.format, hasFormat
	case "text":
		b, bit = &r.text, hasText
	case "summary":
		b, bit = &r.summary, hasSummary
	case "data":
		b, bit = &r.data, hasData
	case "signature":
		b, bit = &r.sig, hasSignature
	default:
		return r.addExtra(key, v)
	}
	if v.Type() == fastjson.TypeNull {
		return nil
	}
	frag, err := v.StringBytes()
	if err != nil {
		return fmt.Errorf("%w: reasoning detail %s is not a string", ErrMalformed, key)
	}
	switch {
	case s != nil:
		if r.has&bit == 0 {
			*s = string(frag)
		}
	case len(*b)+len(frag) > maxLine:
		return fmt.Errorf("%w: reasoning detail %s over %d bytes", ErrMalformed, key, maxLine)
	default:
		*b = append(*b, frag...)
	}
	r.has |= bit
	return nil
}

// addExtra keeps a key the detail has no field for, as first sent.
func (r *reasoningDetail) addExtra(key []byte, v *fastjson.Value) error {
	for _, k := range r.extraKeys {
		if k == string(key) {
			return nil
		}
	}
	r.extraKeys = append(r.extraKeys, string(key))
	r.extra = append(r.extra, ',')
	r.extra = event.AppendString(r.extra, string(key))
	r.extra = append(r.extra, ':')
	at := len(r.extra)
	r.extra = v.MarshalTo(r.extra)
	if fastjson.ValidateBytes(r.extra[at:]) != nil { // as decoded leniently: written again as JSON
		r.extra = appendJSON(r.extra[:at], v)
	}
	if len(r.extra) > maxLine {
		return fmt.Errorf("%w: reasoning detail keys over %d bytes", ErrMalformed, maxLine)
	}
	return nil
}

// appendJSON appends v as JSON, its strings escaped as the event codec
// escapes them and its numbers as Go writes them: fastjson decodes some
// input leniently (a control byte in a string, a number "00"), and its
// MarshalTo writes such a value back as no JSON.
func appendJSON(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeString:
		return event.AppendString(dst, string(v.GetStringBytes()))
	case fastjson.TypeObject:
		dst = append(dst, '{')
		n := 0
		v.GetObject().Visit(func(key []byte, e *fastjson.Value) {
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = event.AppendString(dst, string(key))
			dst = append(dst, ':')
			dst = appendJSON(dst, e)
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		dst = append(dst, '[')
		for i, e := range v.GetArray() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, e)
		}
		return append(dst, ']')
	case fastjson.TypeNumber:
		if f := v.GetFloat64(); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.AppendFloat(dst, f, 'g', -1, 64)
		}
		return append(dst, "null"...)
	}
	return v.MarshalTo(dst)
}

// appendReasoningThinking appends, as a thinking array, the details
// streamed, or, when none came, the reasoning text as a reasoning.text
// detail; it appends nothing when there was no reasoning.
func appendReasoningThinking(dst []byte, details []reasoningDetail, text []byte) []byte {
	if len(details) == 0 {
		if len(text) == 0 {
			return dst
		}
		details = []reasoningDetail{{has: hasType | hasText, typ: "reasoning.text", text: text}}
	}
	n := 0
	for i := range details {
		r := &details[i]
		if r.has == 0 && len(r.extra) == 0 {
			continue // an index skipped
		}
		if n == 0 {
			dst = append(dst, '[')
		} else {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"`+openRouterKey+`":`...)
		dst = r.appendTo(dst)
		dst = append(dst, '}')
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	return dst
}

// thinkingSize is about the bytes details take as thinking, so the answer's
// thinking is allocated once.
func thinkingSize(details []reasoningDetail, text []byte) int {
	n := len(text) + 64
	for i := range details {
		r := &details[i]
		n += 96 + len(r.typ) + len(r.id) + len(r.format) + len(r.text) + len(r.summary) + len(r.data) + len(r.sig) + len(r.extra)
	}
	return n
}

// appendTo appends the detail as OpenRouter sends it, the keys that came in
// a fixed order.
func (r *reasoningDetail) appendTo(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, '{')
	key := func(name string) {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
		dst = append(dst, name...)
	}
	// A text field's bytes are empty when its bit is not set, so making
	// them a string there costs nothing.
	field := func(bit uint8, name, v string) {
		if r.has&bit != 0 {
			key(name)
			dst = event.AppendString(dst, v)
		}
	}
	field(hasType, `"type":`, r.typ)
	field(hasText, `"text":`, string(r.text))
	field(hasSummary, `"summary":`, string(r.summary))
	field(hasData, `"data":`, string(r.data))
	field(hasSignature, `"signature":`, string(r.sig))
	field(hasID, `"id":`, r.id)
	field(hasFormat, `"format":`, r.format)
	if r.has&hasIndex != 0 {
		key(`"index":`)
		dst = strconv.AppendInt(dst, int64(r.index), 10)
	}
	if len(r.extra) > 0 {
		key("")
		dst = append(dst, r.extra[1:]...) // its leading comma written by key
	}
	return append(dst, '}')
}

// appendReasoningDetails appends, to an assistant message for OpenRouter,
// the reasoning_details kept in its thinking: OpenRouter's blocks only, as
// they were streamed; another provider's are left out.
func appendReasoningDetails(dst, thinking []byte) ([]byte, error) {
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(thinking)
	if err != nil {
		return nil, fmt.Errorf("thinking is not JSON: %v", err)
	}
	blocks, err := v.Array()
	if err != nil {
		return nil, errors.New("thinking is not a JSON array")
	}
	n := 0
	for _, b := range blocks {
		detail := b.Get(openRouterKey)
		if detail == nil || detail.Type() != fastjson.TypeObject {
			continue // another provider's
		}
		if n == 0 {
			dst = append(dst, `,"reasoning_details":[`...)
		} else {
			dst = append(dst, ',')
		}
		n++
		dst = detail.MarshalTo(dst)
	}
	if n > 0 {
		dst = append(dst, ']')
	}
	return dst, nil
}
