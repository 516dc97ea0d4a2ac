package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/convert"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// cmdChatList is `lnk agent chat list`: the agent's conversations, a line
// each.
func cmdChatList(f flags, args []string, getenv func(string) string) error {
	ch, err := f.openChat(args, getenv, threads(0), "lnk agent chat list takes no THREAD")
	if err != nil {
		return err
	}
	defer ch.Close()
	w := bufio.NewWriter(os.Stdout)
	if err := listChats(context.Background(), w, ch.agent, ch.opener); err != nil {
		return err
	}
	return w.Flush()
}

// chatLine is one conversation as chat list shows it.
type chatLine struct {
	thread, kind string
	events       int64
	last         time.Time
}

// listChats writes a line for each conversation of agent a, sorted by
// thread. A folder holding none (an empty one, a driver's own, one a
// conversion left beside) is left out.
func listChats(ctx context.Context, w io.Writer, a home.Agent, opener *stores.Opener) error {
	chats, err := a.Path(home.Chats, "")
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(chats)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var lines []chatLine
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), convert.Suffix) {
			continue
		}
		dir := filepath.Join(chats, e.Name())
		kind, err := opener.Kind(dir)
		if err != nil {
			return err
		}
		if kind == "" {
			continue
		}
		l, err := describe(ctx, opener, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		if l.events == 0 {
			continue
		}
		l.kind = kind
		lines = append(lines, l)
	}
	slices.SortFunc(lines, func(x, y chatLine) int { return strings.Compare(x.thread, y.thread) })
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", l.thread, l.kind, l.events, l.last.UTC().Format(time.RFC3339)); err != nil {
			return err
		}
	}
	return nil
}

// describe reads the conversation in dir's thread (its first event's),
// its events and its last event's time.
func describe(ctx context.Context, opener *stores.Opener, dir string) (chatLine, error) {
	l := chatLine{thread: filepath.Base(dir)}
	conv, err := opener.Open(dir, "")
	if err != nil {
		return l, err
	}
	defer conv.Close()
	if l.events, err = conv.Last(ctx); err != nil || l.events == 0 {
		return l, err
	}
	var (
		dec  event.Decoder
		derr error
	)
	read := func(seq int64, into func(*event.Event)) error {
		err := conv.Read(ctx, seq, store.Forward, func(_ int64, ev []byte) bool {
			var e event.Event
			if derr = dec.Decode(ev, &e); derr == nil {
				into(&e)
			}
			return false
		})
		if err == nil {
			err = derr
		}
		return err
	}
	if err := read(1, func(e *event.Event) {
		if e.Thread != "" {
			l.thread = e.Thread
		}
	}); err != nil {
		return l, err
	}
	return l, read(l.events, func(e *event.Event) { l.last = e.Time })
}
