package instructions

import (
	"time"

	"lnk.dev/linkharness/harness/home"
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
	Now   func() time.Time // tells a file's age (see racyAge); nil is time.Now
	Log   Logger           // told what the prompt left out; nil: nobody
	Read  *int64           // when not nil, is added the bytes read from files

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
// prompt's missing files share.
func (r *Reader) Settings(path string) (settings.Settings, error) {
	if r.missingTurn == 0 {
		r.missingTurn = r.Cache.missing.Turn()
	}
	missing := &r.Cache.missing
	gone, known := missing.Missing(path, r.missingTurn)
	if gone {
		return settings.Defaults(), nil
	}
	seen := r.Cache.kernelNow()
	s, found, err := settings.ReadFound(path)
	switch {
	case err == nil && !found:
		missing.Gone(path, r.missingTurn, seen)
	case found && known:
		missing.Forget(path)
	}
	return s, err
}

func (r *Reader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// count adds n bytes read to the Reader's count.
func (r *Reader) count(n int) {
	if r.Read != nil {
		*r.Read += int64(n)
	}
}
