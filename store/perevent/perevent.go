// Package perevent reads the older form of a conversation, from before the
// log: one file per event in the conversation's folder, named by its seq,
//
//	1.json   {"seq":1,"time":"…","type":"message",…}
//	2.json   {"seq":2,…}
//	…
//
// each holding the event's JSON object, a '\n' after it or not. A folder
// holding 1.json and no events.jsonl is this form. It is read only: an
// Append says store.ErrUnsupported, and lnk agent chat convert --to log
// (or compact) writes it the new way. Files are read one by one, so what
// a read hands out is checked as it goes: a missing seq after the first
// ends the conversation, and a file whose seq is not its name is
// corruption.
package perevent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// FirstName is the file that says a folder holds this form.
const FirstName = "1.json"

// Is says whether dir holds the older form.
func Is(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); err == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, FirstName))
	return err == nil
}

// Conversation reads one conversation of the older form. It holds nothing
// between calls; it is for one goroutine at a time.
type Conversation struct{ dir string }

var _ store.Conversation = (*Conversation)(nil)

// Open returns the conversation in dir.
func Open(dir string) (*Conversation, error) { return &Conversation{dir: dir}, nil }

// Names reports whether name is one of this form's files.
func Names(name string) bool {
	n, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return err == nil && seq > 0 && strconv.FormatInt(seq, 10) == n
}

// Last returns the highest seq of the folder's files.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return 0, fmt.Errorf("perevent: %w", err)
	}
	var last int64
	for _, e := range ents {
		if Names(e.Name()) {
			seq, _ := strconv.ParseInt(strings.TrimSuffix(e.Name(), ".json"), 10, 64)
			last = max(last, seq)
		}
	}
	return last, nil
}

// Append refuses: the older form is read only.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return fmt.Errorf("perevent: %s is kept a file per event, the form before the log: convert it with lnk agent chat convert --to log: %w", c.dir, store.ErrUnsupported)
}

// Read hands out the events from from, forward or back.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(int64, []byte) bool) error {
	last, err := c.Last(ctx)
	if err != nil || last == 0 {
		return err
	}
	if from <= 0 || (reverse && from > last) {
		from = last
	}
	step := int64(1)
	if reverse {
		step = -1
	}
	for seq := from; seq >= 1 && seq <= last; seq += step {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(c.dir, strconv.FormatInt(seq, 10)+".json")
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("perevent: %s: %w: seq %d is missing, though %d is there", c.dir, store.ErrCorrupt, seq, last)
		}
		if err != nil {
			return fmt.Errorf("perevent: %w", err)
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(b) > event.MaxBytes {
			return fmt.Errorf("perevent: %s: %w: %d bytes, longer than any event", path, store.ErrCorrupt, len(b))
		}
		if s, err := event.SeqOf(b); err != nil || s != seq {
			return fmt.Errorf("perevent: %s: %w: not the event of seq %d", path, store.ErrCorrupt, seq)
		}
		if !fn(seq, b) {
			return nil
		}
	}
	return nil
}

// Close does nothing: nothing is held.
func (c *Conversation) Close() error { return nil }
