// Package rules holds what every driver checks the same way: thread keys,
// side data names, events handed to append, and how a tool list narrows.
package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// MaxThreadBytes is the longest thread key a driver keeps.
const MaxThreadBytes = 200

// Thread says what is wrong with a thread key, if anything, wrapping
// store.ErrBadName: empty, over MaxThreadBytes, or holding a control byte
// (NUL ends a key in some stores).
func Thread(thread string) error {
	if thread == "" || len(thread) > MaxThreadBytes {
		return fmt.Errorf("%w: thread key of %d bytes, not 1 to %d", store.ErrBadName, len(thread), MaxThreadBytes)
	}
	for i := 0; i < len(thread); i++ {
		if c := thread[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: thread key %q holds a control byte", store.ErrBadName, thread)
		}
	}
	return nil
}

// Name says what is wrong with a side datum's name, if anything, wrapping
// store.ErrBadName.
func Name(name string) error {
	if name == "" || len(name) > 100 {
		return fmt.Errorf("%w: side datum name of %d bytes, not 1 to 100", store.ErrBadName, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: side datum name %q holds %q", store.ErrBadName, name, c)
		}
	}
	return nil
}

// Data says what is wrong with a side datum's value, if anything, wrapping
// store.ErrTooLarge.
func Data(data []byte) error {
	if len(data) > store.MaxMetaBytes {
		return fmt.Errorf("%w: side datum of %d bytes, over %d", store.ErrTooLarge, len(data), store.MaxMetaBytes)
	}
	return nil
}

// Datum says what is wrong with a side datum to put, its name or its
// value, if anything (Name, Data).
func Datum(name string, data []byte) error {
	if err := Name(name); err != nil {
		return err
	}
	return Data(data)
}

// Event says why ev cannot be the event of seq, wrapping
// store.ErrBadEvent: over event.MaxBytes (then store.ErrTooLarge too),
// holding a newline, not one JSON object, or its seq another.
func Event(seq int64, ev []byte) error {
	if seq <= 0 {
		return fmt.Errorf("%w: seq %d: a seq starts at 1", store.ErrBadEvent, seq)
	}
	if len(ev) > event.MaxBytes {
		return fmt.Errorf("%w: %w: %d bytes, over the limit of %d", store.ErrBadEvent, store.ErrTooLarge, len(ev), event.MaxBytes)
	}
	if i := bytes.IndexByte(ev, '\n'); i >= 0 {
		return fmt.Errorf("%w: a newline at byte %d", store.ErrBadEvent, i)
	}
	s, err := event.SeqOf(ev)
	if err != nil {
		return err
	}
	if s != seq {
		return fmt.Errorf("%w: the event's seq is %d, not %d", store.ErrBadEvent, s, seq)
	}
	if !json.Valid(ev) {
		return fmt.Errorf("%w: not valid JSON", store.ErrBadEvent)
	}
	return nil
}

// Narrow returns the tool list after narrowing: kept, the side datum as it
// is (nil when the conversation was never narrowed), narrowed to tools. It
// returns the new list and the side datum to write. An entry is a whole
// tool (memory) or one call (memory__search), and a whole tool allows each
// of its calls: an entry of either list is kept when the other names it or
// its whole tool, so memory then memory__search is memory__search. It is
// harness/tools' Narrow, so a conversation narrows the same wherever it is
// kept.
func Narrow(kept []byte, tools []string) ([]string, []byte, error) {
	next := slices.Clone(tools)
	if kept != nil {
		var had []string
		if err := json.Unmarshal(kept, &had); err != nil {
			return nil, nil, fmt.Errorf("%w: side datum %q: %v", store.ErrCorrupt, store.ToolsMeta, err)
		}
		next = slices.DeleteFunc(next, func(t string) bool {
			return !slices.ContainsFunc(had, func(h string) bool { return within(t, h) })
		})
		for _, h := range had {
			if slices.ContainsFunc(tools, func(t string) bool { return within(h, t) }) {
				next = append(next, h)
			}
		}
	}
	slices.Sort(next)
	next = slices.Compact(next)
	if next == nil {
		next = []string{}
	}
	b, err := json.Marshal(next)
	return next, b, err
}

// within says whether tool list entry e is allowed by entry a: it is a, or
// one call (a__call) of the whole tool a.
func within(e, a string) bool {
	tool, _, isCall := strings.Cut(e, "__")
	return e == a || isCall && tool == a
}
