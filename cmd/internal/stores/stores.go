// Package stores wires every way of keeping a conversation into Link
// Harness's programs, in one switch, so a store package never registers
// itself and the programs agree on how a folder is read.
package stores

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/perevent"
)

// Open opens the conversation in folder dir the way the folder says it is
// kept; kind, the spec's [storage] conversations, says how one with nothing
// in it yet starts. The folder is read once, by name, whatever it holds.
func Open(dir, kind string) (store.Conversation, error) { return Options{}.Open(dir, kind) }

// Options are what a program hands the stores it opens.
type Options struct {
	// Synced, if set, is called after each fsync of a log or of compact
	// frames with how long it took.
	Synced func(time.Duration)
	// Log gets a plugin program's start and restart, for a driver first
	// reached through these Options; nil logs nothing.
	Log *slog.Logger
}

// Open is the package's Open with o.
func (o Options) Open(dir, kind string) (store.Conversation, error) {
	synced := o.Synced
	f, err := look(dir)
	if err != nil {
		return nil, err
	}
	if c, ok, err := openDriver(dir, kind, f, o.Log); ok {
		return c, err
	}
	switch {
	case f.frames:
		return compact.OpenOptions(dir, compact.Options{Synced: synced})
	case f.perEvent && !f.log:
		return perevent.Open(dir) // the form before the log, read only
	case kind == "compact" && f.isNew():
		return compact.OpenOptions(dir, compact.Options{Synced: synced})
	}
	return eventlog.OpenOptions(dir, eventlog.Options{Synced: synced})
}

// folder is what a conversation's folder holds, by name.
type folder struct {
	markers  []string // store.<driver> markers
	log      bool     // events.jsonl
	frames   bool     // events.zst
	perEvent bool     // 1.json: the form before the log
}

// isNew says whether the folder holds neither a log nor frames.
func (f folder) isNew() bool { return !f.log && !f.frames }

// look reads the names in dir once. A folder not made yet holds nothing.
func look(dir string) (folder, error) {
	var f folder
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("stores: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return f, fmt.Errorf("stores: %s: %w", dir, err)
	}
	for _, n := range names {
		switch {
		case n == eventlog.FileName:
			f.log = true
		case n == compact.FramesName:
			f.frames = true
		case n == perevent.FirstName:
			f.perEvent = true
		case strings.HasPrefix(n, markerPrefix):
			f.markers = append(f.markers, n)
		}
	}
	return f, nil
}
