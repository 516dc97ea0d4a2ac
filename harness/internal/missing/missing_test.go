package missing

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestStill(t *testing.T) {
	seen := time.Unix(1000, 0)
	old := seen.Add(-time.Second).UnixNano()
	kept := Key{Dev: 1, Ino: 2, Mtime: old, Ctime: old}
	with := func(f func(*Key)) Key { k := kept; f(&k); return k }
	for _, c := range []struct {
		name string
		kept Key
		seen time.Time
		now  Key
		want bool
	}{
		{"unchanged", kept, seen, kept, true},
		{"another inode", kept, seen, with(func(k *Key) { k.Ino++ }), false},
		{"another device", kept, seen, with(func(k *Key) { k.Dev++ }), false},
		{"modified", kept, seen, with(func(k *Key) { k.Mtime++ }), false},
		{"changed", kept, seen, with(func(k *Key) { k.Ctime++ }), false},
		{"gone", kept, seen, Key{}, false},
		{"never stat'ed", Key{}, seen, Key{}, false},
		{"modified within Settled of the look", with(func(k *Key) { k.Mtime = seen.Add(-Settled + 1).UnixNano() }), seen,
			with(func(k *Key) { k.Mtime = seen.Add(-Settled + 1).UnixNano() }), false},
		{"changed within Settled of the look", with(func(k *Key) { k.Ctime = seen.Add(-Settled + 1).UnixNano() }), seen,
			with(func(k *Key) { k.Ctime = seen.Add(-Settled + 1).UnixNano() }), false},
		{"changed Settled before the look", with(func(k *Key) { k.Ctime = seen.Add(-Settled).UnixNano() }), seen,
			with(func(k *Key) { k.Ctime = seen.Add(-Settled).UnixNano() }), true},
		{"changed after the look", with(func(k *Key) { k.Mtime = seen.Add(time.Millisecond).UnixNano() }), seen,
			with(func(k *Key) { k.Mtime = seen.Add(time.Millisecond).UnixNano() }), false},
	} {
		if got := Still(c.kept, c.seen, c.now); got != c.want {
			t.Errorf("%s: Still = %v, want %v", c.name, got, c.want)
		}
	}
}

// tree is a folder whose changes are made settled: each change is followed
// by times set back, each time to another second long past, and a look is
// said to be made a second later than now, past the folder's change time.
type tree struct {
	t    *testing.T
	root string
	back int64
	fs   Files
	turn uint64
}

func newTree(t *testing.T) *tree {
	return &tree{t: t, root: t.TempDir(), back: 1e9}
}

func (tr *tree) path(name string) string { return filepath.Join(tr.root, filepath.FromSlash(name)) }

// settle sets the times of the root and of every folder under it back.
func (tr *tree) settle() {
	tr.t.Helper()
	err := filepath.WalkDir(tr.root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		tr.back++
		at := time.Unix(tr.back, 0)
		return os.Chtimes(p, at, at)
	})
	if err != nil {
		tr.t.Fatal(err)
	}
}

// next begins a turn.
func (tr *tree) next() { tr.turn = tr.fs.Turn() }

// look is what a caller does: whether the file at name is missing,
// without a look at it when Files knows.
func (tr *tree) look(name string) bool {
	p := tr.path(name)
	gone, known := tr.fs.Missing(p, tr.turn)
	if gone {
		return true
	}
	seen := time.Now().Add(time.Second)
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err == unix.ENOENT {
		tr.fs.Gone(p, tr.turn, seen)
		return true
	}
	if known {
		tr.fs.Forget(p)
	}
	return false
}

func (tr *tree) mkdir(name string) {
	if err := os.MkdirAll(tr.path(name), 0o700); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) write(name string) {
	if err := os.WriteFile(tr.path(name), []byte("x"), 0o600); err != nil {
		tr.t.Fatal(err)
	}
}

// each looks at the files in a turn of its own and says which are missing.
func (tr *tree) each(names ...string) []bool {
	tr.next()
	out := make([]bool, len(names))
	for i, n := range names {
		out[i] = tr.look(n)
	}
	return out
}

func (tr *tree) wantMissing(name string, want bool) {
	tr.t.Helper()
	if got := tr.each(name); got[0] != want {
		tr.t.Fatalf("%s missing: %v, want %v", name, got[0], want)
	}
}

// Every change that makes a missing file is seen at the next turn, and a
// turn with nothing changed stats each folder once and no file.
func TestFilesSeenNextTurn(t *testing.T) {
	cases := []struct {
		name string
		make func(tr *tree)
		file string
	}{
		{"in a folder that was", func(tr *tree) { tr.write("instructions/persona.md") }, "instructions/persona.md"},
		{"in a folder made then", func(tr *tree) { tr.mkdir("memory"); tr.write("memory/notes.md") }, "memory/notes.md"},
		{"deep", func(tr *tree) {
			tr.mkdir("instructions/models/anthropic/opus")
			tr.write("instructions/models/anthropic/opus/instruction.md")
		}, "instructions/models/anthropic/opus/instruction.md"},
		{"a folder put in its place", func(tr *tree) {
			tr.mkdir("new")
			tr.write("new/persona.md")
			// os.Rename refuses a folder over a folder; rename(2) takes an empty one.
			if err := unix.Rename(tr.path("new"), tr.path("instructions")); err != nil {
				t.Fatal(err)
			}
		}, "instructions/persona.md"},
		{"its folder in another's place", func(tr *tree) {
			tr.mkdir("other/deep")
			tr.write("other/deep/x")
			if err := os.Rename(tr.path("other"), tr.path("instructions/models")); err != nil {
				t.Fatal(err)
			}
		}, "instructions/models/deep/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			tr.mkdir("instructions")
			tr.settle()
			tr.wantMissing(c.file, true)
			stats := tr.fs.stats
			tr.wantMissing(c.file, true)
			if n := tr.fs.stats - stats; n != 1 {
				t.Errorf("nothing changed, and %d folders stat'ed", n)
			}
			c.make(tr)
			tr.wantMissing(c.file, false)
			if n, _ := tr.fs.Len(); n != 0 {
				t.Errorf("%d files kept once there", n)
			}
			// Removed again, and so still, and back.
			if err := os.Remove(tr.path(c.file)); err != nil {
				t.Fatal(err)
			}
			tr.wantMissing(c.file, true)
			tr.settle()
			tr.wantMissing(c.file, true)
			tr.wantMissing(c.file, true)
			tr.write(c.file)
			tr.wantMissing(c.file, false)
		})
	}
}

// Files in one folder share its stat: a turn with nothing changed makes
// one system call for them all, and allocates nothing.
func TestFilesShareFolders(t *testing.T) {
	tr := newTree(t)
	tr.mkdir("instructions")
	tr.mkdir("memory")
	tr.settle()
	names := []string{
		"instructions/persona.md", "instructions/owner.md", "instructions/models/anthropic/opus/instruction.md",
		"memory/notes.md", "files", "skills",
	}
	tr.each(names...)
	stats := tr.fs.stats
	for i, gone := range tr.each(names...) {
		if !gone {
			t.Errorf("%s found", names[i])
		}
	}
	if n := tr.fs.stats - stats; n != 3 {
		t.Errorf("%d folders stat'ed for 3 folders", n)
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = tr.path(n)
	}
	allocs := testing.AllocsPerRun(100, func() {
		turn := tr.fs.Turn()
		for _, p := range paths {
			if gone, _ := tr.fs.Missing(p, turn); !gone {
				t.Fatalf("%s found", p)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("a turn with nothing changed allocates %.0f times", allocs)
	}
	if files, folders := tr.fs.Len(); files != len(names) || folders != 3 {
		t.Errorf("%d files in %d folders kept", files, folders)
	}
}

// A folder changed within Settled of the look is not trusted: the file is
// looked at until the folder's times have settled.
func TestFilesUnsettled(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "persona.md")
	var fs Files
	turn := fs.Turn()
	fs.Gone(p, turn, time.Now())
	turn = fs.Turn()
	if gone, known := fs.Missing(p, turn); gone || !known {
		t.Errorf("a folder just made: missing %v, known %v; want a look at the file", gone, known)
	}
	fs.Gone(p, turn, time.Now().Add(time.Second))
	if gone, _ := fs.Missing(p, fs.Turn()); !gone {
		t.Error("a settled folder not trusted")
	}
}

// Where a symlink leads nowhere, nothing is kept: the link's target may be
// made without a change to any folder on the file's way.
func TestFilesDanglingSymlink(t *testing.T) {
	tr := newTree(t)
	if err := os.Symlink(tr.path("elsewhere"), tr.path("instructions")); err != nil {
		t.Fatal(err)
	}
	tr.settle()
	tr.wantMissing("instructions/persona.md", true)
	if n, _ := tr.fs.Len(); n != 0 {
		t.Fatalf("%d files kept behind a dangling symlink", n)
	}
	tr.mkdir("elsewhere")
	tr.write("elsewhere/persona.md")
	tr.wantMissing("instructions/persona.md", false)
}

// The files kept are bounded: past maxFiles, all are let go.
func TestFilesBounded(t *testing.T) {
	tr := newTree(t)
	tr.settle()
	tr.next()
	for i := range maxFiles + 10 {
		tr.look("f" + string(rune('a'+i%26)) + time.Duration(i).String())
	}
	if files, folders := tr.fs.Len(); files > maxFiles || folders > 1 {
		t.Errorf("%d files in %d folders kept, over %d", files, folders, maxFiles)
	}
}
