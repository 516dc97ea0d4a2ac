package chatcopy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/internal/osfile"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/durable"
	"lnk.dev/linkharness/store/event"
)

// mark closes each answer's part of the copy: an HTML comment, which
// Markdown shows as nothing.
func mark(seq int64) string { return "<!-- lnk:answer " + strconv.FormatInt(seq, 10) + " -->\n" }

// Append appends to dst the copy's part for events, oldest first: each
// message and each answer with text, then the mark of the last answer.
func Append(dst []byte, agent string, events []event.Event) []byte {
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
		dst = append(dst, mark(last)...)
	}
	return dst
}

// File is the copy for people held open: its file, the file's identity
// and size as last written, and the seq of the answer whose mark ends it.
// A warm conversation keeps it open between its turns. The zero value
// holds nothing.
type File struct {
	fd       int
	open     bool
	dev, ino uint64
	size     int64
	mark     int64
}

// IsOpen says whether c holds the file open.
func (c *File) IsOpen() bool { return c.open }

// Close closes the file c holds.
func (c *File) Close() {
	if c.open {
		unix.Close(c.fd)
	}
	*c = File{}
}

// Open opens the copy for people at path, made empty when there is none,
// and says whether it ends with the mark of answer prev (empty when prev
// is 0). kept, when open, is the copy as the turn before left it: it is
// used without a read while path names the same file, of the size left
// and ending with prev's mark; a person may have replaced it, or written
// to it.
func Open(path string, prev int64, kept File) (File, bool, error) {
	var st unix.Stat_t
	if kept.open {
		if err := unix.Stat(path, &st); err == nil && st.Dev == kept.dev && st.Ino == kept.ino && st.Size == kept.size && kept.mark == prev {
			return kept, true, nil
		}
		kept.Close()
	}
	fd, err := osfile.OpenFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return File{}, false, err
	}
	c := File{fd: fd, open: true, mark: prev}
	if err := unix.Fstat(fd, &st); err != nil {
		c.Close()
		return File{}, false, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	c.dev, c.ino, c.size = st.Dev, st.Ino, st.Size
	ends, err := endsWithMark(fd, c.size, prev)
	if err != nil {
		c.Close()
		return File{}, false, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return c, ends, nil
}

// Add writes at the copy's end the parts of events, what was said since
// the answer its mark names, each answer closing its part, as Write makes
// them, and returns how many bytes it wrote. A write that fails closes
// the file.
func (c *File) Add(path, agent string, events []event.Event) (int, error) {
	var b []byte
	start := 0
	for i := range events {
		if events[i].Type == event.TypeAnswer {
			b = Append(b, agent, events[start:i+1])
			start = i + 1
			c.mark = events[i].Seq
		}
	}
	if _, err := osfile.Pwrite(c.fd, b, c.size); err != nil {
		c.Close()
		return 0, &fs.PathError{Op: "write", Path: path, Err: err}
	}
	c.size += int64(len(b))
	return len(b), nil
}

// endsWithMark says whether the copy, open as fd and size bytes long,
// ends with the mark of answer prev (an empty copy when prev is 0).
func endsWithMark(fd int, size, prev int64) (bool, error) {
	if prev == 0 {
		return size == 0, nil
	}
	m := mark(prev)
	if size < int64(len(m)) {
		return false, nil
	}
	tail := make([]byte, len(m))
	n, err := osfile.Pread(fd, tail, size-int64(len(m)))
	if err != nil {
		return false, err
	}
	return n == len(tail) && bytes.Equal(tail, []byte(m)), nil
}

// Remake makes the copy at path again from every event of conv, when it
// was cut short or written elsewhere, and returns how many bytes it wrote.
// It is written as it is made, so a long conversation's copy is never
// held in memory whole.
func Remake(ctx context.Context, path, agent string, conv store.Conversation) (int64, error) {
	var n int64
	err := durable.WriteAtomic(path, 0o600, func(w io.Writer) error {
		var err error
		n, err = Write(ctx, w, agent, conv)
		return err
	})
	return n, err
}

// Write writes a conversation's whole copy for people, made from its
// events, to w, and returns how many bytes it wrote. It holds at most the
// messages since the last answer.
func Write(ctx context.Context, w io.Writer, agent string, conv store.Conversation) (int64, error) {
	return write(ctx, w, agent, conv, false)
}

// WriteWithSummaries is Write with each summary shown where it was
// written, after the answer before it, marked as what it is: what the
// model reads in place of the events it covers, never part of the chat
// (lnk agent chat show --summaries).
func WriteWithSummaries(ctx context.Context, w io.Writer, agent string, conv store.Conversation) (int64, error) {
	return write(ctx, w, agent, conv, true)
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

func write(ctx context.Context, w io.Writer, agent string, conv store.Conversation, summaries bool) (int64, error) {
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
			buf = Append(buf[:0], agent, pending)
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
