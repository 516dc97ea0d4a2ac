package model

import (
	"fmt"

	"lnk.dev/linkharness/store/event"
)

// appendStringObject appends an object of one string: head (the object
// opened up to the string's key), s as a JSON string, and the object's
// close, after a comma when n objects stand before it; it returns the
// count with it. A system prompt, a user's text and an assistant's text
// block are each one.
func appendStringObject(dst []byte, n int, head, s string) ([]byte, int) {
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, head...)
	dst = event.AppendString(dst, s)
	return append(dst, '}'), n + 1
}

// appendTools appends tools as a request's "tools" array, each opened by
// open (up to its name's value), its description, when it has one, and its
// schema under schemaKey, then closed by close; a cache breakpoint goes on
// the last one when mark is set (Anthropic's, where no system prompt
// follows the tools).
func appendTools(dst []byte, tools []Tool, open, schemaKey, close string, mark bool) []byte {
	dst = append(dst, `,"tools":[`...)
	for i := range tools {
		t := &tools[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, open...)
		dst = event.AppendString(dst, t.Name)
		if t.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = event.AppendString(dst, t.Description)
		}
		dst = append(dst, schemaKey...)
		dst = appendSchema(dst, t.Schema)
		if mark && i == len(tools)-1 {
			dst = append(dst, cacheControl...)
		}
		dst = append(dst, close...)
	}
	return append(dst, ']')
}

// appendSchema appends a tool's schema, or an object schema that takes
// anything when it has none.
func appendSchema(dst, schema []byte) []byte {
	if len(schema) == 0 {
		return append(dst, `{"type":"object"}`...)
	}
	return append(dst, schema...)
}

// appendArgs appends a call's arguments, {} when it has none.
func appendArgs(dst, args []byte) []byte {
	if len(args) == 0 {
		return append(dst, `{}`...)
	}
	return append(dst, args...)
}

// roleError is the error of a message whose role is neither a user's nor
// an assistant's, the only two a conversation sent has.
func roleError(role string) error {
	return fmt.Errorf("role %q is not user or assistant", role)
}

// messageError is err, met encoding message i of a request in format.
func messageError(format string, i int, err error) error {
	return fmt.Errorf("model: %s: message %d: %w", format, i, err)
}
