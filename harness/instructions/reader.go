package instructions

import (
	"errors"
	"fmt"
	"io"
	"os"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/internal/apart"
	"lnk.dev/linkharness/harness/settings"
)

// Reader is one turn's reading of its agent's home through a Cache: the
// settings, the prompt's sections and their composition. A file found
// missing is told missing still by one stat of its folder a turn, shared
// by every missing file in it (see unchanged). A Reader is for one turn at
// a time; with a Cache and an Agent it is ready.
type Reader struct {
	Cache *Cache // what the turns before read, until the files change
	Agent home.Agent
	Log   Logger // told what the prompt left out; nil: nobody
	Read  *int64 // when not nil, is added the bytes read from files

	missingTurn uint64    // the turn's number among the missing files; 0 before it looks at one
	paths       homePaths // the paths the prompt reads, set by Sections
}

// Logger is told what a prompt left out, and why: a file missing, over its
// section's most, not UTF-8, behind a symlink, or outside the home.
type Logger interface {
	LeftOut(section, file, why string)
}

// Settings reads the agent's settings from config.json at path. A home
// with no config.json has the defaults; while the home's folder is
// unchanged, it still has none, told by the one stat of the folder the
// prompt's missing files share. A config.json unchanged since a turn read
// it is not read again: one stat tells it (see unchanged), and the
// settings it held are given as they were decoded, a bad one's error
// again.
func (r *Reader) Settings(path string) (settings.Settings, error) {
	e, err := r.unchanged(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return settings.Defaults(), nil
	case e != nil && e.set != nil:
		return *e.set, e.err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return settings.Defaults(), nil
	}
	if err != nil {
		return settings.Defaults(), err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return settings.Defaults(), err
	}
	k, ok := keyOf(fi)
	if e := r.Cache.get(path, k); ok && e != nil && e.set != nil {
		return *e.set, e.err
	}
	b, err := io.ReadAll(io.LimitReader(f, settings.MaxConfigBytes+1))
	if err != nil {
		return settings.Defaults(), err
	}
	if len(b) > settings.MaxConfigBytes {
		return settings.Defaults(), fmt.Errorf("%s: over %d bytes", path, settings.MaxConfigBytes)
	}
	// Decoded on a goroutine of its own: encoding/json's frames take about
	// a KiB a level of the settings' nesting, past what a turn's stack
	// holds (see package apart). A file is decoded only once changed.
	s, err := apart.Do(func() (settings.Settings, error) { return settings.Decode(path, b) })
	if ok {
		r.Cache.put(path, &cached{key: k, set: &s, err: err, setBytes: len(b)})
	}
	return s, err
}

// count adds n bytes read to the Reader's count.
func (r *Reader) count(n int) {
	if r.Read != nil {
		*r.Read += int64(n)
	}
}
