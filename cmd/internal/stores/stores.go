// Package stores wires every way of keeping a conversation into Link
// Harness's programs, in one switch, so a store package never registers
// itself and the programs agree on how a folder is read.
package stores

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/driver"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/perevent"
)

// Where the store bridge is, read by the programs' main: LNK_STORE_BRIDGE
// is its base URL, and LNK_STORE_BRIDGE_KEY_FILE a file holding the agent's
// key on one line (the key file the harness serves with). The key stays in
// a file so it is not handed down to every program the harness starts with
// its environment.
const (
	BridgeEnv    = "LNK_STORE_BRIDGE"
	BridgeKeyEnv = "LNK_STORE_BRIDGE_KEY_FILE"
)

// ErrBadKind comes when a conversation's kind, the spec's [storage]
// conversations, names no way of keeping it that this process reaches.
var ErrBadKind = errors.New("stores: no such kind of conversation")

// Opener opens conversations the way their folders say they are kept,
// reaching drivers through the store bridge when Bridge is set, else
// through their programs. Set its fields before the first call, then use
// it by pointer: it is safe for concurrent use, and keeps the drivers it
// reached, one per agent home and driver, until Close. The zero value
// reaches each driver through its program.
type Opener struct {
	Bridge    string // the store bridge's base URL (LNK_STORE_BRIDGE); "" reaches each driver's program lnk-<name>
	BridgeKey []byte // the agent's key the bridge is proved with
	// Synced, if set, is called after each fsync of a log or of compact
	// frames with how long it took.
	Synced func(time.Duration)
	// Log gets a plugin program's start and restart; nil logs nothing.
	Log *slog.Logger
	// Environ is the environment a plugin program is started in, as
	// os.Environ gives one: the agent's own, where an agents file gives
	// it one; nil is this process's.
	Environ []string

	// mu guards drivers.
	mu      sync.Mutex
	drivers map[string]*driver.Driver // by home and name, or by the bridge

	now func() time.Time // nil: time.Now

	listMu sync.Mutex
	// guarded by listMu
	listed   map[string]listing // by folder, while it is unchanged (listing.go)
	listings int                // how many times a folder's names were read
}

// Open opens the conversation in folder dir the way the folder says it is
// kept; kind, the spec's [storage] conversations, says how one with nothing
// in it yet starts: log, compact, or a driver's name. For a new
// conversation, a kind that names no way reached is ErrBadKind; one already
// kept is read where it is, whatever kind says, since changing the spec
// moves nothing (programs check the spec's kind once at start, with Check).
// An empty kind opens a conversation to read it: a folder holding none is
// store.ErrNotFound. The folder is read once, by name, whatever it holds.
func (o *Opener) Open(dir, kind string) (store.Conversation, error) {
	f, err := o.look(dir)
	if err != nil {
		return nil, err
	}
	name, err := marked(dir, f)
	if err != nil {
		return nil, err
	}
	switch {
	case name != "":
		return o.OpenKept(dir, name)
	case f.frames:
		return compact.OpenOptions(dir, compact.Options{Synced: o.Synced})
	case f.perEvent && !f.log:
		return perevent.Open(dir) // the form before the log, read only
	case f.log:
		return eventlog.OpenOptions(dir, eventlog.Options{Synced: o.Synced})
	}
	if kind == "" {
		return nil, fmt.Errorf("%w: %s holds no conversation", store.ErrNotFound, dir)
	}
	if err := o.Check(homeOf(dir), kind); err != nil {
		return nil, err
	}
	switch kind {
	case "log":
		return eventlog.OpenOptions(dir, eventlog.Options{Synced: o.Synced})
	case "compact":
		return compact.OpenOptions(dir, compact.Options{Synced: o.Synced})
	}
	// A driver's: the marker first, so the folder says who keeps it.
	if err := mark(dir, kind); err != nil {
		return nil, err
	}
	return o.OpenKept(dir, kind)
}

// Check says whether kind is a way of keeping the conversations of the
// agent at home this process reaches: log, compact, or a driver whose
// program lnk-<kind> is found, or any driver's name when the store bridge
// is set. It is ErrBadKind, naming the kinds, when not.
func (o *Opener) Check(home, kind string) error {
	if kind == "log" || kind == "compact" {
		return nil
	}
	if err := checkName(kind); err != nil {
		return badKind(kind, err)
	}
	if _, err := o.driverFor(home, kind); err != nil {
		return badKind(kind, err)
	}
	return nil
}

func badKind(kind string, why error) error {
	return fmt.Errorf("%w: %q (the kinds: log, compact, or a driver's name whose program lnk-<name> is beside this one or on PATH, or any through a store bridge: set %s and %s, an agent of an agents file in its [agent.env]): %v",
		ErrBadKind, kind, BridgeEnv, BridgeKeyEnv, why)
}

// folder is what a conversation's folder holds, by name.
type folder struct {
	markers  []string // store.<driver> markers
	log      bool     // events.jsonl
	frames   bool     // events.zst
	perEvent bool     // 1.json: the form before the log
}

// look reads the names in dir once. A folder not made yet holds nothing.
func look(dir string) (folder, error) {
	var f folder
	names, err := dirNames(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("stores: %w", err)
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

// Kind says how folder dir keeps its conversation: a driver's name, as its
// marker says, "compact", "perevent" (the form before the log, read only),
// "log", or "" when it holds none (an empty folder, or a driver's own,
// like events.pebble).
func (o *Opener) Kind(dir string) (string, error) {
	f, err := o.look(dir)
	if err != nil {
		return "", err
	}
	name, err := marked(dir, f)
	switch {
	case err != nil:
		return "", err
	case name != "":
		return name, nil
	case f.frames:
		return "compact", nil
	case f.perEvent && !f.log:
		return "perevent", nil
	case f.log:
		return "log", nil
	}
	return "", nil
}
