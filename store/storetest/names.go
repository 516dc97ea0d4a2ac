package storetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"lnk.dev/linkharness/store"
)

// Every name a store makes where the conversations' folders live is one
// no thread's folder may bear (store.Reserved), so a thread can never be
// taken for the store's own file, nor the file for a thread; a store that
// keeps a conversation in a folder named by its thread (the log, compact)
// names what it makes there so too, so it cannot be taken for the
// harness's own files there. Every file and folder it makes is its owner's
// alone: the events are the agent's conversations. The process's umask is
// 0 while the store runs, so a file made with a mode wider than 0600 shows
// it.
func testOwnNames(t *testing.T, s *suite) {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	threads := []string{"own-a", "own-b"}
	for _, thread := range threads {
		c := s.conv(thread)
		fill(t, c, thread, 1, 3)
		// What only some stores do makes files in some: side data, a
		// narrowing, a lease.
		token := useAbilities(t, c, "pending.3", "answer", "memory", "own@test:1:1")
		if token != 0 {
			if err := c.(store.Leaser).Release(bg, token); err != nil {
				t.Fatal(err)
			}
		}
		read(t, c, 1, store.Forward, 0)
	}
	// A store's files may come and go as it runs (SQLite's -wal and -shm
	// are there while it is open): the names are looked at while it is
	// open, and once it is closed.
	s.ownNames(threads)
	s.reopen()
	read(t, s.conv("own-a"), 1, store.Backward, 0)
	if err := s.d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s.d = nil
	s.ownNames(threads)
}

// ownNames checks the names and modes of everything in the folder where
// the store keeps conversations; a folder named as one of threads is that
// conversation's.
func (s *suite) ownNames(threads []string) {
	t := s.t
	t.Helper()
	root := filepath.Join(s.dir, s.chats)
	ents, err := os.ReadDir(root)
	if s.chats != "" && os.IsNotExist(err) {
		return // a program keeping nothing on this machine made no chats folder
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() && slices.Contains(threads, name) {
			inner, err := os.ReadDir(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range inner {
				if !store.Reserved(f.Name()) {
					t.Errorf("the store made %s in a conversation's folder: a name not kept from the harness's own (store.Reserved)", filepath.Join(name, f.Name()))
				}
			}
			continue
		}
		if !store.Reserved(name) {
			t.Errorf("the store made %s beside the conversations' folders: a thread's folder could bear that name (store.Reserved)", name)
		}
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err // the folder given to the store is the suite's
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			rel, _ := filepath.Rel(s.dir, path)
			t.Errorf("%s has mode %v: group or others may reach it", rel, perm)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
