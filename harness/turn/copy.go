package turn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// The copy for people (chat.md) holds what was said up to the agent's last
// answer: the messages and the agent's answers, never a tool's call or its
// answer, never a message while it is being answered. Each answer adds what
// was said since the one before to its end, closed by a mark naming the
// answer's seq; when the copy does not end with the mark of the answer
// before, it is made again from every event.
//
// It is kept beside a log only. A compact conversation keeps none (it would
// take most of what compression saves), nor does one a driver keeps, whose
// folder holds only its marker and what is not an event; a conversation says
// so with KeepsNoCopy. lnk agent chat show and the harness's GET of a
// conversation make such a copy from the events (WriteCopy), and Link
// Memory makes its own.

// copyMark closes each answer's part of the copy: an HTML comment, which
// Markdown shows as nothing.
func copyMark(seq int64) string { return "<!-- lnk:answer " + strconv.FormatInt(seq, 10) + " -->\n" }

// AppendCopy appends to dst the copy's part for events, oldest first: each
// message and each answer with text, then the mark of the last answer.
func AppendCopy(dst []byte, agent string, events []event.Event) []byte {
	var last int64
	for i := range events {
		e := &events[i]
		switch {
		case e.Type == event.TypeMessage:
			name := e.From.Name
			if name == "" {
				name = e.From.ID
			}
			if name == "" {
				name = "someone"
			}
			dst = fmt.Appendf(dst, "**%s** · %s\n\n%s\n\n", name, e.Time.Local().Format("2006-01-02 15:04"), e.Text)
		case e.Type == event.TypeAnswer && e.Text != "":
			dst = fmt.Appendf(dst, "**%s** · %s\n\n%s\n\n", agent, e.Time.Local().Format("2006-01-02 15:04"), e.Text)
			last = e.Seq
		case e.Type == event.TypeAnswer:
			last = e.Seq
		}
	}
	if last > 0 {
		dst = append(dst, copyMark(last)...)
	}
	return dst
}

// addToCopy adds this turn's part to the copy: the events since the answer
// before this turn's, which the turn already holds. events are the window
// as read (its first n) and then everything the turn appended; n < 0 says
// the turn's own events are not all there (what left the window mid-turn),
// and the copy is made again from the store.
func (t *turn) addToCopy(ctx context.Context, events []event.Event, n int) error {
	path, err := t.r.Agent.Path(home.ChatCopy, t.thread)
	if err != nil {
		return err
	}
	if k, ok := ability[interface{ KeepsNoCopy() bool }](t.conv); ok && k.KeepsNoCopy() {
		// A copy left from when the conversation was a log would be read
		// in place of the events, and never grow again.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if n < 0 {
		return t.remakeCopy(ctx, path)
	}
	// The answer before this turn's, and what came after it.
	prev, from := int64(0), 0
	for i := n - 1; i >= 0; i-- {
		if e := &events[i]; e.Type == event.TypeAnswer {
			prev, from = e.Seq, i+1
			break
		}
	}
	f, err := openFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	endsWell, err := endsWithMark(f, prev)
	if err != nil {
		return err
	}
	if !endsWell || (prev == 0 && events[0].Seq != 1) {
		return t.remakeCopy(ctx, path)
	}
	// Each answer closes its part, as WriteCopy makes them.
	var b []byte
	part, start := events[from:], 0
	for i := range part {
		if part[i].Type == event.TypeAnswer {
			b = AppendCopy(b, t.r.Agent.Name, part[start:i+1])
			start = i + 1
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	t.written += int64(len(b))
	return nil
}

// endsWithMark says whether the copy ends with the mark of answer prev (an
// empty copy when prev is 0).
func endsWithMark(f *os.File, prev int64) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if prev == 0 {
		return fi.Size() == 0, nil
	}
	mark := copyMark(prev)
	if fi.Size() < int64(len(mark)) {
		return false, nil
	}
	tail := make([]byte, len(mark))
	if _, err := f.ReadAt(tail, fi.Size()-int64(len(mark))); err != nil {
		return false, err
	}
	return bytes.Equal(tail, []byte(mark)), nil
}

// remakeCopy makes the copy again from every event, when it was cut short
// or written elsewhere. It is written as it is made, so a long
// conversation's copy is never held in memory whole.
func (t *turn) remakeCopy(ctx context.Context, path string) error {
	return home.WriteAtomic(path, 0o600, func(w io.Writer) error {
		n, err := WriteCopy(ctx, w, t.r.Agent.Name, t.conv)
		t.written += n
		return err
	})
}

// WriteCopy writes a conversation's whole copy for people, made from its
// events, to w, and returns how many bytes it wrote. It holds at most the
// messages since the last answer.
func WriteCopy(ctx context.Context, w io.Writer, agent string, conv store.Conversation) (int64, error) {
	return writeCopy(ctx, w, agent, conv, false)
}

// WriteCopyWithSummaries is WriteCopy with each summary shown where it was
// written, after the answer before it, marked as what it is: what the
// model reads in place of the events it covers, never part of the chat
// (lnk agent chat show --summaries).
func WriteCopyWithSummaries(ctx context.Context, w io.Writer, agent string, conv store.Conversation) (int64, error) {
	return writeCopy(ctx, w, agent, conv, true)
}

// AppendSummary appends to dst how a summary event e is shown to a person
// looking at a conversation: a quote, headed by what it covers and what it
// cost.
func AppendSummary(dst []byte, e *event.Event) []byte {
	dst = fmt.Appendf(dst, "> **summary of events 1 to %d**, in the model's window in their place from event %d on · %s · %s, %d tokens in (%d from the cache), %d out\n>\n",
		e.Through, e.Seq, e.Time.Local().Format("2006-01-02 15:04"), e.Model, e.Usage.Input+e.Usage.CacheRead+e.Usage.CacheWrite, e.Usage.CacheRead, e.Usage.Output)
	for _, c := range e.Calls {
		dst = fmt.Appendf(dst, "> (called %s %s before it)\n>\n", c.Name, c.Args)
	}
	for line := range strings.SplitSeq(e.Text, "\n") {
		if line == "" {
			dst = append(dst, ">\n"...)
			continue
		}
		dst = append(dst, "> "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

func writeCopy(ctx context.Context, w io.Writer, agent string, conv store.Conversation, summaries bool) (int64, error) {
	var (
		dec     event.Decoder
		buf     []byte
		pending []event.Event
		e       event.Event
		n       int64
		derr    error
	)
	err := conv.Read(ctx, 1, store.Forward, func(_ int64, ev []byte) bool {
		if derr = dec.Decode(ev, &e); derr != nil {
			return false
		}
		switch e.Type {
		case event.TypeMessage:
			pending = append(pending, event.Event{Seq: e.Seq, Type: e.Type, Time: e.Time, From: e.From, Text: e.Text})
		case event.TypeAnswer:
			pending = append(pending, event.Event{Seq: e.Seq, Type: e.Type, Time: e.Time, Text: e.Text})
			buf = AppendCopy(buf[:0], agent, pending)
			pending = pending[:0]
			var m int
			m, derr = w.Write(buf)
			n += int64(m)
			return derr == nil
		case event.TypeSummary:
			if !summaries {
				return true
			}
			var m int
			m, derr = w.Write(AppendSummary(buf[:0], &e))
			n += int64(m)
			return derr == nil
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return n, err
}
