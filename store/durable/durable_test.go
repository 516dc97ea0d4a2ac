package durable

import (
	"os"
	"path/filepath"
	"testing"
)

// ReplaceFile puts a file whole in place, over the one there, making its
// folder; a rename that fails leaves the old file and no temporary one.
func TestReplaceFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "tool-lists.json")
	for _, body := range []string{`{"first":1}`, `{}`} {
		if err := ReplaceFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != body {
			t.Fatalf("read back %q %v, want %q", b, err, body)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v", fi.Mode(), err)
	}
	if err := ReplaceFile(filepath.Join(dir, "shared"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "shared")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode())
	}
	busy := filepath.Join(dir, "busy")
	os.MkdirAll(filepath.Join(busy, "inside"), 0o700) // a folder not empty: no file renames over it
	if err := ReplaceFile(busy, []byte("x"), 0o600); err == nil {
		t.Error("replaced a folder")
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 {
		t.Errorf("the folder holds %v, want busy, shared and tool-lists.json alone", names)
	}
}

// MakeDirDeferred makes a folder and its missing parents, says whether it
// made it, syncs the names of the parents it made in one wait and leaves
// the folder's own to its writer, and refuses a file in its way.
func TestMakeDirDeferred(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "chats", "web-1")
	before := osCommitter.Stats()
	if made, err := MakeDirDeferred(dir); err != nil || !made {
		t.Fatalf("a new folder: made %v, %v", made, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("not made: %v", err)
	}
	if got := osCommitter.Stats(); got.Commits-before.Commits != 1 {
		t.Errorf("a new folder in a new parent: %d Commits, want the parent's name in one", got.Commits-before.Commits)
	}
	if made, err := MakeDirDeferred(dir); err != nil || made {
		t.Errorf("a folder there: made %v, %v", made, err)
	}
	before = osCommitter.Stats()
	if made, err := MakeDirDeferred(filepath.Join(root, "chats", "web-2")); err != nil || !made {
		t.Errorf("beside one: made %v, %v", made, err)
	}
	if got := osCommitter.Stats(); got.Commits != before.Commits {
		t.Errorf("a new folder beside one: %d Commits, want its name left to its writer", got.Commits-before.Commits)
	}
	if err := SyncDir(filepath.Join(root, "chats", "web-2"), filepath.Join(root, "chats")); err != nil {
		t.Fatal(err)
	}
	if got := osCommitter.Stats(); got.Commits-before.Commits != 1 {
		t.Errorf("a folder and its parent synced in %d Commits, want one", got.Commits-before.Commits)
	}
	before = osCommitter.Stats()
	if made, err := MakeDirDeferred(filepath.Join(root, "a", "b", "c")); err != nil || !made {
		t.Fatalf("three new folders: made %v, %v", made, err)
	}
	if got := osCommitter.Stats(); got.Commits-before.Commits != 1 {
		t.Errorf("three new folders: the two parents' names synced in %d Commits, want one", got.Commits-before.Commits)
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	for _, p := range []string{file, filepath.Join(file, "under")} {
		if made, err := MakeDirDeferred(p); err == nil || made {
			t.Errorf("%s: made %v, %v; want an error", p, made, err)
		}
	}
}
