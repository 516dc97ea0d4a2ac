package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// A driver keys a conversation by its folder's name, so a conversation
// converted to a driver has its events written there under that name
// while its folder still keeps it the old way: nothing reads them until
// the exchange puts in place the folder holding only the driver's marker
// and what is not an event. One converted out of a driver is forgotten by
// it once the exchange is done.
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
	release, err := holdStopped(a.Dir)
	if err != nil {
		return err
	}
	defer release()
	defer stores.CloseDrivers()
	if isDriver(*to) {
		if err := stores.Reach(a.Dir, *to); err != nil {
			return err
		}
	}
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
	count := map[outcome]int{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(chats, e.Name())
		if real, ok := strings.CutSuffix(dir, convertSuffix); ok {
			// A conversion stopped short; one whose folder is still there
			// is settled when that folder's turn comes.
			if !exists(real) {
				if err := settle(real, *to); err != nil {
					return fmt.Errorf("settling %s: %w", e.Name(), err)
				}
			}
			continue
		}
		o, err := convertOne(dir, *to)
		if err != nil {
			return fmt.Errorf("converting %s: %w", e.Name(), err)
		}
		count[o]++
	}
	fmt.Printf("%s: %d conversations now kept as %s, %d were already\n", a.Name, count[converted], *to, count[already])
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

// isDriver says whether kind names a driver rather than a way a folder
// keeps its conversation itself.
func isDriver(kind string) bool {
	return kind != "log" && kind != "compact" && kind != "perevent"
}

// kindOf says how the folder keeps its conversation, and "" for a folder
// that holds none (an empty one, or a driver's own, like events.pebble).
func kindOf(dir string) (string, error) {
	name, err := stores.Kept(dir)
	switch {
	case err != nil:
		return "", err
	case name != "":
		return name, nil
	case exists(filepath.Join(dir, compact.FramesName)):
		return "compact", nil
	case perevent.Is(dir):
		return "perevent", nil
	case exists(filepath.Join(dir, eventlog.FileName)):
		return "log", nil
	}
	return "", nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// toolsFile is the name of the list a conversation was narrowed to, and
// toolsShape its shape (harness/tools reads and writes it).
const toolsFile = "tools.json"

type toolsShape struct {
	Tools []string `json:"tools"`
}

// oldFiles says which of a folder's names are left behind: those holding
// its events the old way, and the tool list when the new way keeps it.
func oldFiles(kind, to string, toolsKept bool) func(string) bool {
	return func(name string) bool {
		switch {
		case name == "chat.md":
			return to == "compact" // a compact conversation keeps no copy
		case name == toolsFile:
			return toolsKept
		case kind == "log":
			return name == eventlog.FileName
		case kind == "compact":
			return name == compact.FramesName || name == compact.TailName
		case kind == "perevent":
			return perevent.Names(name)
		}
		return name == "store."+kind // a driver's marker
	}
}

// What convertOne did with a folder.
type outcome int

const (
	skipped   outcome = iota // it holds no conversation
	already                  // it was kept that way
	converted                // it is now
)

// convertOne writes the conversation in dir the new way, in a folder
// beside it, and exchanges the two.
func convertOne(dir, to string) (outcome, error) {
	if err := settle(dir, to); err != nil {
		return skipped, err
	}
	kind, err := kindOf(dir)
	switch {
	case err != nil || kind == "":
		return skipped, err
	case kind == to:
		return already, nil
	}
	if isDriver(kind) && isDriver(to) && stores.Bridged() {
		return skipped, fmt.Errorf("it is kept by %q, and through the store bridge every driver's name reaches the bridge's one store: convert it to log or compact first", kind)
	}
	tmp := dir + convertSuffix
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return skipped, err
	}
	from, err := stores.Open(dir, "")
	if err != nil {
		return skipped, err
	}
	defer from.Close()
	var into store.Conversation
	switch {
	case to == "compact":
		into, err = compact.OpenOptions(tmp, compact.Options{Unsynced: true})
	case to == "log":
		into, err = eventlog.Open(tmp)
	default:
		into, err = stores.OpenKept(dir, to) // under dir's name, unread until the exchange
	}
	if err != nil {
		return skipped, err
	}
	ctx := context.Background()
	err = copyEvents(ctx, from, into)
	toolsKept := false
	if err == nil {
		toolsKept, err = moveTools(ctx, dir, tmp, kind, to, from, into)
	}
	if cerr := into.Close(); err == nil {
		err = cerr // an Unsynced compact conversation is synced here
	}
	if err != nil {
		return skipped, err
	}
	if err := linkAlong(dir, tmp, oldFiles(kind, to, toolsKept)); err != nil {
		return skipped, err
	}
	if isDriver(to) {
		// Only once the driver holds every event: a marker beside the
		// conversation says its driver's rows are a whole copy (settle).
		if err := stores.Mark(tmp, to); err != nil {
			return skipped, err
		}
	}
	if err := syncDir(tmp); err != nil {
		return skipped, err
	}
	// One rename puts the new folder in place: an exchange, since the old
	// one is not empty. Before it the old way is whole in place; after it,
	// the new way.
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		return skipped, fmt.Errorf("exchange %s and %s: %w", tmp, dir, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return skipped, err
	}
	// The old way, forgotten: a driver's rows first, so a failure leaves
	// the old folder and its marker for the next run to settle.
	if isDriver(kind) {
		if err := forget(dir, kind); err != nil {
			return skipped, err
		}
	}
	return converted, os.RemoveAll(tmp)
}

// copyEvents appends every event of from to into, byte for byte. An event
// into already holds is success when its bytes are the same, so a
// conversion to a driver run again after a failure finds what the first
// run wrote; into holding more events than from is an error.
func copyEvents(ctx context.Context, from, into store.Conversation) error {
	var werr error
	n := int64(0)
	err := from.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		werr = into.Append(ctx, seq, ev)
		n = seq
		return werr == nil
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if last, err := from.Last(ctx); err != nil || last != n {
		return fmt.Errorf("read %d events of %d: %v", n, last, err)
	}
	if last, err := into.Last(ctx); err != nil || last != n {
		return fmt.Errorf("the new way holds %d events, the old %d: %v", last, n, err)
	}
	return nil
}

// moveTools carries the list the conversation was narrowed to over to the
// new way when a driver keeps it on either side: from tools.json or the
// old driver's narrowing into the new driver's, or from the old driver's
// narrowing into tmp/tools.json. It reports whether dir's tools.json stays
// behind. A driver that cannot narrow leaves tools.json as it is, linked
// along.
func moveTools(ctx context.Context, dir, tmp, kind, to string, from, into store.Conversation) (bool, error) {
	if !isDriver(kind) && !isDriver(to) {
		return false, nil
	}
	list, inFile, err := readTools(ctx, dir, kind, from)
	if err != nil || list == nil {
		return false, err
	}
	if !isDriver(to) {
		if inFile {
			return false, nil
		}
		b, err := json.Marshal(toolsShape{list})
		if err != nil {
			return false, err
		}
		return true, home.WriteFileAtomic(filepath.Join(tmp, toolsFile), append(b, '\n'), 0o600)
	}
	n, ok := into.(store.Narrower)
	if !ok {
		return false, nil
	}
	kept, err := n.NarrowTools(ctx, list)
	if errors.Is(err, store.ErrUnsupported) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if want := slices.Compact(slices.Sorted(slices.Values(list))); !slices.Equal(kept, want) {
		return false, fmt.Errorf("the driver %s already keeps the tools %q, not %q", to, kept, want)
	}
	return true, nil
}

// readTools returns the list the conversation was narrowed to, nil when it
// was not: its driver's narrowing when it has one, else tools.json (inFile).
func readTools(ctx context.Context, dir, kind string, from store.Conversation) (list []string, inFile bool, err error) {
	if m, ok := from.(store.Meta); ok && isDriver(kind) {
		b, err := m.MetaGet(ctx, store.ToolsMeta)
		switch {
		case err == nil:
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, false, fmt.Errorf("the driver %s's tools: %w", kind, err)
			}
			if list == nil {
				list = []string{}
			}
			return list, false, nil
		case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrUnsupported):
			return nil, false, err
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, toolsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var t toolsShape
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, false, fmt.Errorf("%s: %w", filepath.Join(dir, toolsFile), err)
	}
	if t.Tools == nil {
		t.Tools = []string{}
	}
	return t.Tools, true, nil
}

// settle finishes a conversion of dir that stopped short, leaving the
// folder beside it. Whichever side of its exchange it stopped, the folder
// in place is whole and the one beside it is not needed. But a driver
// named by a marker in the folder beside it, and not keeping the folder in
// place, holds a whole copy of the conversation that nothing reads: the
// conversion to it stopped before its exchange, or the one from it before
// forgetting it. That copy is forgotten, unless the conversion now is to
// that driver, which then finds the same bytes there again.
func settle(dir, to string) error {
	tmp := dir + convertSuffix
	if !exists(tmp) {
		return nil
	}
	was, err := stores.Kept(tmp)
	if err != nil {
		return err
	}
	now, err := stores.Kept(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if was != "" && was != now && was != to && !(now != "" && stores.Bridged()) {
		if err := forget(dir, was); err != nil {
			return err
		}
	}
	return os.RemoveAll(tmp)
}

// forget has driver name forget what it keeps under dir's name. A driver
// that cannot is told of, and its rows stay.
func forget(dir, name string) error {
	c, err := stores.OpenKept(dir, name)
	if err != nil {
		return err
	}
	defer c.Close()
	f, ok := c.(store.Forgetter)
	if ok {
		err = f.Forget(context.Background())
	}
	if !ok || errors.Is(err, store.ErrUnsupported) {
		fmt.Fprintf(os.Stderr, "lnk: the driver %s cannot forget %s: its copy there stays, read by nothing\n", name, filepath.Base(dir))
		return nil
	}
	if err != nil {
		return fmt.Errorf("forgetting it in %s: %w", name, err)
	}
	return nil
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
