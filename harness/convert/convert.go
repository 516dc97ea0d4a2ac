package convert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/durable"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/perevent"
)

// Suffix names the folder beside a conversation its new way is written
// in. A thread's folder name holds a '~' only before the hash it ends
// with (home.ThreadDir), so no thread's folder ends so.
const Suffix = "~convert"

// Stores reaches the ways of keeping a conversation, as a program wires
// them: the same opener its turns use.
type Stores interface {
	// Kind says how folder dir keeps its conversation: a driver's name,
	// "compact", "perevent", "log", or "" when it holds none.
	Kind(dir string) (string, error)
	// Open opens the conversation in dir the way the folder says it is
	// kept; kind is as turn.Opener's, "" to read one.
	Open(dir, kind string) (store.Conversation, error)
	// OpenKept opens what driver name keeps under dir's folder name,
	// whatever the folder says now.
	OpenKept(dir, name string) (store.Conversation, error)
	// Mark makes the marker saying driver name keeps dir's conversation,
	// durably.
	Mark(dir, name string) error
	// Bridged says whether every driver's name reaches one store (the
	// store bridge).
	Bridged() bool
}

// Converter converts an agent's conversations from one way of keeping
// them to another. Its zero value is not usable: set Stores. It is for one
// goroutine at a time, and the agent must be stopped while it runs.
type Converter struct {
	Stores Stores
	Warn   func(msg string) // told of what is left undone and harmless; nil tells nobody
}

// Chats converts every conversation in the agent's chats folder to the
// way to says, each in a folder beside it put in its place with one
// rename, and counts what it did with each folder. A conversion that
// stopped short before is settled first. No chats folder is
// fs.ErrNotExist.
func (c *Converter) Chats(chats, to string) (map[Outcome]int, error) {
	ents, err := os.ReadDir(chats)
	if err != nil {
		return nil, err
	}
	count := map[Outcome]int{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(chats, e.Name())
		if real, ok := strings.CutSuffix(dir, Suffix); ok {
			// A conversion stopped short; one whose folder is still there
			// is settled when that folder's turn comes.
			if !exists(real) {
				if err := c.settle(real, to); err != nil {
					return count, fmt.Errorf("settling %s: %w", e.Name(), err)
				}
			}
			continue
		}
		o, err := c.One(dir, to)
		if err != nil {
			return count, fmt.Errorf("converting %s: %w", e.Name(), err)
		}
		count[o]++
	}
	return count, nil
}

// IsDriver says whether kind names a driver rather than a way a folder
// keeps its conversation itself (log, compact, perevent), or none ("").
func IsDriver(kind string) bool {
	return kind != "" && kind != "log" && kind != "compact" && kind != "perevent"
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
			return to != "log" // only a log keeps a copy for people beside it
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

// Outcome is what One did with a folder.
type Outcome int

const (
	Skipped   Outcome = iota // it holds no conversation
	Already                  // it was kept that way
	Converted                // it is now
)

// One writes the conversation in folder dir the way to says, in a folder
// beside it, and exchanges the two.
func (c *Converter) One(dir, to string) (Outcome, error) {
	if err := c.settle(dir, to); err != nil {
		return Skipped, err
	}
	kind, err := c.Stores.Kind(dir)
	switch {
	case err != nil || kind == "":
		return Skipped, err
	case kind == to:
		return Already, nil
	}
	if IsDriver(kind) && IsDriver(to) && c.Stores.Bridged() {
		return Skipped, fmt.Errorf("it is kept by %q, and through the store bridge every driver's name reaches the bridge's one store: convert it to log or compact first", kind)
	}
	tmp := dir + Suffix
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return Skipped, err
	}
	from, err := c.Stores.Open(dir, "")
	if err != nil {
		return Skipped, err
	}
	defer from.Close()
	var into store.Conversation
	switch {
	case to == "compact":
		into, err = compact.OpenOptions(tmp, compact.Options{Unsynced: true})
	case to == "log":
		into, err = eventlog.Open(tmp)
	default:
		into, err = c.Stores.OpenKept(dir, to) // under dir's name, unread until the exchange
	}
	if err != nil {
		return Skipped, err
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
		return Skipped, err
	}
	if err := linkAlong(dir, tmp, oldFiles(kind, to, toolsKept)); err != nil {
		return Skipped, err
	}
	if IsDriver(to) {
		// Only once the driver holds every event: a marker beside the
		// conversation says its driver's rows are a whole copy (settle).
		if err := c.Stores.Mark(tmp, to); err != nil {
			return Skipped, err
		}
	}
	if err := durable.SyncDir(tmp); err != nil {
		return Skipped, err
	}
	// One rename puts the new folder in place: an exchange, since the old
	// one is not empty. Before it the old way is whole in place; after it,
	// the new way.
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		return Skipped, fmt.Errorf("exchange %s and %s: %w", tmp, dir, err)
	}
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return Skipped, err
	}
	// The old way, forgotten: a driver's rows first, so a failure leaves
	// the old folder and its marker for the next run to settle.
	if IsDriver(kind) {
		if err := c.forget(dir, kind); err != nil {
			return Skipped, err
		}
	}
	return Converted, os.RemoveAll(tmp)
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
	if !IsDriver(kind) && !IsDriver(to) {
		return false, nil
	}
	list, inFile, err := readTools(ctx, dir, kind, from)
	if err != nil || list == nil {
		return false, err
	}
	if !IsDriver(to) {
		if inFile {
			return false, nil
		}
		b, err := json.Marshal(toolsShape{list})
		if err != nil {
			return false, err
		}
		return true, durable.WriteFileAtomic(filepath.Join(tmp, toolsFile), append(b, '\n'), 0o600)
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
	if m, ok := from.(store.Meta); ok && IsDriver(kind) {
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
func (c *Converter) settle(dir, to string) error {
	tmp := dir + Suffix
	if !exists(tmp) {
		return nil
	}
	was, err := c.Stores.Kind(tmp)
	if err != nil {
		return err
	}
	now, err := c.Stores.Kind(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if IsDriver(was) && was != now && was != to && !(IsDriver(now) && c.Stores.Bridged()) {
		if err := c.forget(dir, was); err != nil {
			return err
		}
	}
	return os.RemoveAll(tmp)
}

// forget has driver name forget what it keeps under dir's name. A driver
// that cannot is told of, and its rows stay.
func (c *Converter) forget(dir, name string) error {
	conv, err := c.Stores.OpenKept(dir, name)
	if err != nil {
		return err
	}
	defer conv.Close()
	f, ok := conv.(store.Forgetter)
	if ok {
		err = f.Forget(context.Background())
	}
	if !ok || errors.Is(err, store.ErrUnsupported) {
		if c.Warn != nil {
			c.Warn(fmt.Sprintf("the driver %s cannot forget %s: its copy there stays, read by nothing", name, filepath.Base(dir)))
		}
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
			if err := durable.SyncDir(dst); err != nil {
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
