package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"lnk.dev/linkharness/harness/chatdir"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/compact"
	eventlog "lnk.dev/linkharness/store/log"
)

// cmdChatRepair repairs a damaged conversation of a stopped agent: it keeps
// the events from seq 1 that read whole and moves the rest beside the
// files (see Repair in store/log and store/compact).
func cmdChatRepair(f flags, args []string, getenv func(string) string) error {
	ch, err := f.openChat(args, getenv, threads(1), "lnk agent chat repair takes one THREAD")
	if err != nil {
		return err
	}
	defer ch.Close()
	thread := ch.pos[0]
	ctx := context.Background()
	dir, err := chatdir.Find(ctx, ch.agent, thread, ch.opener.Open)
	if err != nil {
		return err
	}
	kind, err := ch.opener.Kind(dir)
	if err != nil {
		return err
	}
	return repairChat(ctx, os.Stdout, ch.agent, thread, dir, kind)
}

// repairChat repairs the conversation of thread in folder dir, kept the
// way kind says, and says what it did on w.
func repairChat(ctx context.Context, w io.Writer, a home.Agent, thread, dir, kind string) error {
	var (
		kept int64
		cuts []eventlog.Cut
	)
	switch kind {
	case "":
		return fmt.Errorf("no conversation %q in %s", thread, a.Dir)
	case "log":
		r, err := repairIn[eventlog.Repaired](ctx, dir, eventlog.Open)
		if err != nil {
			return err
		}
		kept, cuts = r.Kept, r.Cuts
	case "compact":
		r, err := repairIn[compact.Repaired](ctx, dir, compact.Open)
		if err != nil {
			return err
		}
		kept = r.Kept
		for _, cut := range r.Cuts {
			cuts = append(cuts, eventlog.Cut(cut))
		}
	case "perevent":
		return fmt.Errorf("%q is kept in the form before the log, which is read only: convert it (lnk agent chat convert --to log), then repair", thread)
	default:
		return fmt.Errorf("%q is kept by the driver %s: repair it with that store's own tools (lnk agent chat repair repairs the log and compact)", thread, kind)
	}
	if len(cuts) == 0 {
		fmt.Fprintf(w, "%s is whole: %d events, nothing moved\n", thread, kept)
		return nil
	}
	for _, c := range cuts {
		fmt.Fprintf(w, "moved %d bytes of %s from offset %d to %s: %s\n", c.Bytes, c.From, c.Offset, c.To, c.Why)
	}
	fmt.Fprintf(w, "kept %d events of %s, seqs 1 to %d\n", kept, thread, kept)
	// The copy for people may show events moved out: the next answer
	// makes it again from the events.
	if path, err := home.In(dir, home.ChatCopy); err == nil {
		if err := os.Remove(path); err == nil {
			fmt.Fprintf(w, "removed %s, made again at the next answer\n", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// repairIn opens the conversation in dir with open, the store's own, and
// repairs it: the log and compact repair alike, each saying what it did
// in a Repaired of its own.
func repairIn[R any, C interface {
	Repair(context.Context) (R, error)
	Close() error
}](ctx context.Context, dir string, open func(string) (C, error)) (R, error) {
	c, err := open(dir)
	if err != nil {
		var none R
		return none, err
	}
	defer c.Close()
	return c.Repair(ctx)
}
