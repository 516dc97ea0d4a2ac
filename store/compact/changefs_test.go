package compact

import (
	"io/fs"
	"path/filepath"

	"lnk.dev/linkharness/store/internal/disk"
)

// changeFS is a filesystem whose files of the names it picks hand each
// change to them (a write, a sync, a truncate) to change, which makes it
// (change.do) or does something else in its place: fail, stop or die. The
// tests' faulty, dying and killed writers are each a change function.
type changeFS struct {
	disk.FS
	picks  func(name string) bool
	change func(c change) (int, error)
}

// change is one change to a picked file: op is "write", "sync" or
// "truncate"; b is a write's bytes, and off its offset or a truncate's
// size.
type change struct {
	f   disk.File
	op  string
	b   []byte
	off int64
}

// do makes the change on the file.
func (c change) do() (int, error) {
	switch c.op {
	case "write":
		return c.f.WriteAt(c.b, c.off)
	case "sync":
		return 0, c.f.Sync()
	}
	return 0, c.f.Truncate(c.off)
}

// named picks the files whose base name is one of names.
func named(names ...string) func(name string) bool {
	return func(name string) bool {
		for _, n := range names {
			if filepath.Base(name) == n {
				return true
			}
		}
		return false
	}
}

func (d *changeFS) OpenFile(name string, flag int, perm fs.FileMode) (disk.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil || !d.picks(name) {
		return f, err
	}
	return &changeFile{File: f, d: d}, nil
}

// changeFile is a file changeFS picked.
type changeFile struct {
	disk.File
	d *changeFS
}

func (f *changeFile) WriteAt(b []byte, off int64) (int, error) {
	return f.d.change(change{f: f.File, op: "write", b: b, off: off})
}

func (f *changeFile) Sync() error {
	_, err := f.d.change(change{f: f.File, op: "sync"})
	return err
}

func (f *changeFile) Truncate(size int64) error {
	_, err := f.d.change(change{f: f.File, op: "truncate", off: size})
	return err
}
