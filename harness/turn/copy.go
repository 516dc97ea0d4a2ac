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

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/internal/osfile"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/durable"
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
//
// A warm conversation keeps the copy open between its turns (keptCopy),
// with the size it left it and the mark it ends with: while the path
// names the same file of that size, the next part is written at its end
// with no read.
func (t *turn) addToCopy(ctx context.Context, events []event.Event, n int) error {
	path, err := t.r.Agent.Path(home.ChatCopy, t.thread)
	if err != nil {
		return err
	}
	kept := t.takeCopy()
	if k, ok := ability[interface{ KeepsNoCopy() bool }](t.conv); ok && k.KeepsNoCopy() {
		kept.close()
		t.touched = true
		// A copy left from when the conversation was a log would be read
		// in place of the events, and never grow again.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if n < 0 {
		kept.close()
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
	c, endsWell, err := openCopy(path, prev, kept)
	if err != nil || c != kept {
		t.touched = true // opened afresh: made, maybe
	}
	if err != nil {
		return err
	}
	if !endsWell || (prev == 0 && events[0].Seq != 1) {
		c.close()
		return t.remakeCopy(ctx, path)
	}
	// Each answer closes its part, as WriteCopy makes them.
	var b []byte
	part, start := events[from:], 0
	for i := range part {
		if part[i].Type == event.TypeAnswer {
			b = AppendCopy(b, t.r.Agent.Name, part[start:i+1])
			start = i + 1
			c.mark = part[i].Seq
		}
	}
	if _, err := osfile.Pwrite(c.fd, b, c.size); err != nil {
		c.close()
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	c.size += int64(len(b))
	t.written += int64(len(b))
	t.keepCopy(c)
	return nil
}

// keptCopy is the copy for people held open: its file, the file's
// identity and size as last written, and the seq of the answer whose mark
// ends it. The zero value holds nothing.
type keptCopy struct {
	fd       int
	open     bool
	dev, ino uint64
	size     int64
	mark     int64
}

func (c *keptCopy) close() {
	if c.open {
		unix.Close(c.fd)
	}
	*c = keptCopy{}
}

// takeCopy takes the copy the turn before kept open; the zero keptCopy
// when none was.
func (t *turn) takeCopy() keptCopy {
	if t.warm == nil {
		return keptCopy{}
	}
	c := t.warm.copy
	t.warm.copy = keptCopy{}
	return c
}

// keepCopy keeps c open for the next turn when the conversation is kept
// warm; else closes it.
func (t *turn) keepCopy(c keptCopy) {
	if t.warm == nil {
		c.close()
		return
	}
	t.warm.copy = c
}

// openCopy opens the copy for people at path, made empty when there is
// none, and says whether it ends with the mark of answer prev (empty when
// prev is 0). kept, when open, is the copy as the turn before left it: it
// is used without a read while path names the same file, of the size left
// and ending with prev's mark; a person may have replaced it, or written
// to it.
func openCopy(path string, prev int64, kept keptCopy) (keptCopy, bool, error) {
	var st unix.Stat_t
	if kept.open {
		if err := unix.Stat(path, &st); err == nil && st.Dev == kept.dev && st.Ino == kept.ino && st.Size == kept.size && kept.mark == prev {
			return kept, true, nil
		}
		kept.close()
	}
	fd, err := osfile.OpenFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return keptCopy{}, false, err
	}
	c := keptCopy{fd: fd, open: true, mark: prev}
	if err := unix.Fstat(fd, &st); err != nil {
		c.close()
		return keptCopy{}, false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	c.dev, c.ino, c.size = st.Dev, st.Ino, st.Size
	ends, err := endsWithMark(fd, c.size, prev)
	if err != nil {
		c.close()
		return keptCopy{}, false, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return c, ends, nil
}

// endsWithMark says whether the copy, open as fd and size bytes long,
// ends with the mark of answer prev (an empty copy when prev is 0).
func endsWithMark(fd int, size, prev int64) (bool, error) {
	if prev == 0 {
		return size == 0, nil
	}
	mark := copyMark(prev)
	if size < int64(len(mark)) {
		return false, nil
	}
	tail := make([]byte, len(mark))
	n, err := osfile.Pread(fd, tail, size-int64(len(mark)))
	if err != nil {
		return false, err
	}
	return n == len(tail) && bytes.Equal(tail, []byte(mark)), nil
}

// remakeCopy makes the copy again from every event, when it was cut short
// or written elsewhere. It is written as it is made, so a long
// conversation's copy is never held in memory whole.
func (t *turn) remakeCopy(ctx context.Context, path string) error {
	t.touched = true
	return durable.WriteAtomic(path, 0o600, func(w io.Writer) error {
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
