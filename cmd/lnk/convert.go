package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/perevent"
)

// convertSuffix names the folder beside a conversation its new way is
// written in. ThreadDir never makes a '~', so no thread's folder has it.
const convertSuffix = "~convert"

// cmdChatConvert writes every conversation of a stopped agent the way
// --to says, each in a folder beside it, then puts it in its place with
// one rename (an exchange), what else its folder held linked along.
//
// The agent must be stopped: lnk-link-harness serve holds a shared flock
// on the agent's home folder while it serves, and convert takes it
// exclusive without waiting, so it refuses while the agent runs, and an
// agent started during a conversion refuses to serve.
func cmdChatConvert(args []string) error {
	flags := flag.NewFlagSet("lnk agent chat convert", flag.ContinueOnError)
	to := flags.String("to", "", "how to keep the conversations: log, compact or a driver's name")
	agent := agentFlags(flags)
	pos, err := parseInterleaved(flags, args)
	if err != nil {
		return err
	}
	if *to == "" || len(pos) != 0 {
		return usageError("lnk agent chat convert --to log|compact|DRIVER")
	}
	a, err := agent()
	if err != nil {
		return err
	}
	if *to != "log" && *to != "compact" {
		return fmt.Errorf("converting to a driver (%q) is not in this version: --to log or --to compact", *to)
	}
	release, err := holdStopped(a.Dir)
	if err != nil {
		return err
	}
	defer release()
	chats, err := a.Path(home.Chats, "")
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(chats)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Printf("%s has no conversations\n", a.Name)
		return nil
	}
	if err != nil {
		return err
	}
	converted, already := 0, 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), convertSuffix) {
			// A conversion stopped short: whichever side of its rename it
			// stopped, the folder in place is whole and this one is not needed.
			if err := os.RemoveAll(filepath.Join(chats, e.Name())); err != nil {
				return err
			}
			continue
		}
		done, err := convertOne(filepath.Join(chats, e.Name()), *to)
		if err != nil {
			return fmt.Errorf("converting %s: %w", e.Name(), err)
		}
		if done {
			converted++
		} else {
			already++
		}
	}
	fmt.Printf("%s: %d conversations now kept as %s, %d were already\n", a.Name, converted, *to, already)
	return nil
}

// holdStopped takes the agent's home exclusive, without waiting: a running
// lnk-link-harness serve holds it shared.
func holdStopped(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("the agent is running (lnk-link-harness serve holds %s): stop it, then convert", dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// kindOf says how the folder keeps its conversation.
func kindOf(dir string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "store.*"))
	if err != nil {
		return "", err
	}
	switch {
	case len(m) > 0:
		return strings.TrimPrefix(filepath.Base(m[0]), "store."), nil
	case exists(filepath.Join(dir, compact.FramesName)):
		return "compact", nil
	case perevent.Is(dir):
		return "perevent", nil
	}
	return "log", nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// oldFiles says which of a folder's names hold its events the old way.
func oldFiles(kind, to string) func(string) bool {
	return func(name string) bool {
		switch {
		case name == "chat.md":
			return to == "compact" // a compact conversation keeps no copy
		case kind == "log":
			return name == eventlog.FileName
		case kind == "compact":
			return name == compact.FramesName || name == compact.TailName
		case kind == "perevent":
			return perevent.Names(name)
		}
		return false
	}
}

// convertOne writes the conversation in dir the new way, in a folder
// beside it, and exchanges the two; it reports false when it was already
// kept that way.
func convertOne(dir, to string) (bool, error) {
	kind, err := kindOf(dir)
	if err != nil {
		return false, err
	}
	if kind == to {
		return false, nil
	}
	if kind != "log" && kind != "compact" && kind != "perevent" {
		return false, fmt.Errorf("it is kept by the driver %q: converting from a driver is not in this version", kind)
	}
	tmp := dir + convertSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return false, err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return false, err
	}
	from, err := stores.Open(dir, "")
	if err != nil {
		return false, err
	}
	defer from.Close()
	var into store.Conversation
	if to == "compact" {
		into, err = compact.OpenOptions(tmp, compact.Options{Unsynced: true})
	} else {
		into, err = eventlog.Open(tmp)
	}
	if err != nil {
		return false, err
	}
	ctx := context.Background()
	var werr error
	n := int64(0)
	err = from.Read(ctx, 1, false, func(seq int64, ev []byte) bool {
		werr = into.Append(ctx, seq, ev)
		n = seq
		return werr == nil
	})
	if err == nil {
		err = werr
	}
	if cerr := into.Close(); err == nil {
		err = cerr // an Unsynced compact conversation is synced here
	}
	if err != nil {
		return false, err
	}
	if last, err := from.Last(ctx); err != nil || last != n {
		return false, fmt.Errorf("read %d events of %d: %v", n, last, err)
	}
	if err := linkAlong(dir, tmp, oldFiles(kind, to)); err != nil {
		return false, err
	}
	if err := syncDir(tmp); err != nil {
		return false, err
	}
	// One rename puts the new folder in place: an exchange, since the old
	// one is not empty. Before it the old way is whole in place; after it,
	// the new way.
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		return false, fmt.Errorf("exchange %s and %s: %w", tmp, dir, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return false, err
	}
	return true, os.RemoveAll(tmp) // the old way, forgotten
}

// linkAlong hard-links what else dir holds (tools.json, pending/, …) into
// tmp, leaving out what old says holds the events the old way.
func linkAlong(dir, tmp string, old func(string) bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if old(e.Name()) {
			continue
		}
		src, dst := filepath.Join(dir, e.Name()), filepath.Join(tmp, e.Name())
		if e.IsDir() {
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
			if err := linkAlong(src, dst, func(string) bool { return false }); err != nil {
				return err
			}
			if err := syncDir(dst); err != nil {
				return err
			}
			continue
		}
		if err := os.Link(src, dst); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
