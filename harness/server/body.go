package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// messageBody is the body of POST …/messages.
type messageBody struct {
	ID         string
	Text       *string // nil when the body has none
	From       event.Sender
	Owner      bool
	Connection string
}

// bodyParsers keeps parsers between requests: a process's, never an
// agent's.
var bodyParsers fastjson.ParserPool

// parseMessageBody reads a message's body: a JSON object of id, text, from
// {id, name}, owner and connection, each optional, null the same as
// missing. Any other key, a value of another type or JSON that is not valid
// is refused, saying which. Strings that are not UTF-8 have each bad run
// replaced with U+FFFD.
func parseMessageBody(data []byte) (messageBody, error) {
	var b messageBody
	p := bodyParsers.Get()
	defer bodyParsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return b, err
	}
	if !json.Valid(data) { // the parser lets some invalid JSON through
		return b, fmt.Errorf("not valid JSON")
	}
	o, err := v.Object()
	if err != nil {
		return b, fmt.Errorf("not a JSON object")
	}
	o.Visit(func(key []byte, v *fastjson.Value) {
		if err != nil || v.Type() == fastjson.TypeNull {
			return
		}
		switch string(key) {
		case "id":
			b.ID, err = bodyString("id", v)
		case "text":
			var s string
			if s, err = bodyString("text", v); err == nil {
				b.Text = &s
			}
		case "connection":
			b.Connection, err = bodyString("connection", v)
		case "owner":
			if b.Owner, err = v.Bool(); err != nil {
				err = fmt.Errorf("%q is %s, want true or false", key, typeName(v))
			}
		case "from":
			b.From, err = bodySender(v)
		default:
			err = fmt.Errorf("unknown field %q", key)
		}
	})
	return b, err
}

// bodySender reads from: {id, name}.
func bodySender(v *fastjson.Value) (event.Sender, error) {
	var s event.Sender
	o, err := v.Object()
	if err != nil {
		return s, fmt.Errorf(`"from" is %s, want an object`, typeName(v))
	}
	o.Visit(func(key []byte, v *fastjson.Value) {
		if err != nil || v.Type() == fastjson.TypeNull {
			return
		}
		switch string(key) {
		case "id":
			s.ID, err = bodyString("from.id", v)
		case "name":
			s.Name, err = bodyString("from.name", v)
		default:
			err = fmt.Errorf("unknown field %q in \"from\"", key)
		}
	})
	return s, err
}

func bodyString(name string, v *fastjson.Value) (string, error) {
	b, err := v.StringBytes()
	if err != nil {
		return "", fmt.Errorf("%q is %s, want a string", name, typeName(v))
	}
	if !utf8.Valid(b) {
		return strings.ToValidUTF8(string(b), "\uFFFD"), nil
	}
	return string(b), nil
}

// typeName names a JSON value's type for an error, with its article.
func typeName(v *fastjson.Value) string {
	switch v.Type() {
	case fastjson.TypeObject:
		return "an object"
	case fastjson.TypeArray:
		return "an array"
	case fastjson.TypeString:
		return "a string"
	case fastjson.TypeNumber:
		return "a number"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		return "a boolean"
	}
	return "null"
}
