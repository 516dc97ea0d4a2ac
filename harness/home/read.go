package home

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store"
)

// ErrTooLarge comes from ReadFile when a file is larger than its section's
// most. It is a store.ErrTooLarge too.
var ErrTooLarge error = &kindError{"home: file over its limit", store.ErrTooLarge}

// ReadFile reads the file at path, which must lie inside the agent's home,
// without following a symlink anywhere on the way (openat2 with
// RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS), and at most most bytes: a larger
// file is an error wrapping ErrTooLarge, not a cut. A missing file is
// os.ErrNotExist.
func (a Agent) ReadFile(path string, most int) ([]byte, error) {
	rel, err := a.Rel(path)
	if err != nil {
		return nil, err
	}
	f, err := a.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(most)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > most {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, path, most)
	}
	return b, nil
}

// Open opens the file or folder at path, which must lie inside the agent's
// home, for reading, without following a symlink anywhere on the way, as
// ReadFile does. It is for what ReadFile cannot do: list a folder, or stat a
// file before deciding to read it.
func (a Agent) Open(path string) (*os.File, error) {
	rel, err := a.Rel(path)
	if err != nil {
		return nil, err
	}
	return a.open(rel)
}

// Rel returns path relative to the home, a relative path being one from
// the home already, and refuses with ErrBadName a path outside it: how a
// file the spec names is found, so a source configure takes is one a turn
// reads.
func (a Agent) Rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.Dir, path)
	}
	rel, err := filepath.Rel(a.Dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s is outside the home", ErrBadName, path)
	}
	return rel, nil
}

func (a Agent) open(rel string) (*os.File, error) {
	dir, err := unix.Open(a.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: a.Dir, Err: err}
	}
	defer unix.Close(dir)
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(dir, rel, &how)
	if errors.Is(err, unix.ENOSYS) {
		return a.openWalk(rel)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
			return nil, fmt.Errorf("%w: %s: a symlink on the way", ErrBadName, rel)
		}
		return nil, &os.PathError{Op: "open", Path: filepath.Join(a.Dir, rel), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(a.Dir, rel)), nil
}

// openWalk is for kernels without openat2: each folder on the way is
// checked not to be a symlink, and the file is opened with O_NOFOLLOW.
func (a Agent) openWalk(rel string) (*os.File, error) {
	p := a.Dir
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %s: a symlink on the way", ErrBadName, rel)
		}
	}
	f, err := os.OpenFile(filepath.Join(a.Dir, rel), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s: a symlink on the way", ErrBadName, rel)
	}
	return f, err
}
