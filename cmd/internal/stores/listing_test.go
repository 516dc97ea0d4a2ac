package stores

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kind is o.Kind(dir), failing t on an error.
func kind(t *testing.T, o *Opener, dir string) string {
	t.Helper()
	k, err := o.Kind(dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A folder's names are read once while the folder is unchanged, and again
// as soon as a name in it comes or goes.
func TestFolderNamesKept(t *testing.T) {
	dir := chat(t, t.TempDir(), "t")
	roundTrip(t, &Opener{}, dir, "log")
	o := &Opener{now: func() time.Time { return time.Now().Add(time.Hour) }} // the folder long settled
	for range 3 {
		if k := kind(t, o, dir); k != "log" {
			t.Fatalf("kind %q, want log", k)
		}
	}
	openClose := func() {
		c, err := o.Open(dir, "log")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	openClose()
	if o.listings != 1 {
		t.Fatalf("the folder's names read %d times, unchanged, want once", o.listings)
	}
	// The log renamed into the form before it: the folder's times move,
	// and its names are read again.
	if err := os.Rename(filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "1.json")); err != nil {
		t.Fatal(err)
	}
	if k := kind(t, o, dir); k != "perevent" {
		t.Fatalf("kind %q after the log was renamed, want perevent", k)
	}
	if o.listings != 2 {
		t.Fatalf("the folder's names read %d times after a change, want twice", o.listings)
	}
}

// A folder changed within settled of the reading is read again each time:
// its times might not move at a change in the same tick of the clock.
func TestFolderNamesNotKeptWhileUnsettled(t *testing.T) {
	dir := chat(t, t.TempDir(), "t")
	roundTrip(t, &Opener{}, dir, "log")
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := &Opener{now: func() time.Time { return fi.ModTime().Add(settled / 2) }}
	for range 3 {
		if k := kind(t, o, dir); k != "log" {
			t.Fatalf("kind %q, want log", k)
		}
	}
	if o.listings != 3 {
		t.Fatalf("an unsettled folder's names read %d times in 3 looks, want each time", o.listings)
	}
}

// A folder not made yet holds nothing, and nothing is kept of it.
func TestFolderNamesMissing(t *testing.T) {
	o := &Opener{}
	if k := kind(t, o, filepath.Join(t.TempDir(), "none")); k != "" {
		t.Fatalf("kind %q of no folder, want none", k)
	}
	if len(o.listed) != 0 {
		t.Fatalf("%d folders kept, want none", len(o.listed))
	}
}

// BenchmarkFolderLook is what a turn pays to learn how its conversation
// is kept: the folder's names kept (one stat) or read each time (open,
// list, close).
//
//	go test -run '^$' -bench FolderLook -count 10 ./cmd/internal/stores
func BenchmarkFolderLook(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "chats", "t")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"events.jsonl", "ids.index", "chat.md"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("kept", func(b *testing.B) {
		o := &Opener{now: func() time.Time { return time.Now().Add(time.Hour) }}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := o.Kind(dir); err != nil {
				b.Fatal(err)
			}
		}
		if o.listings != 1 {
			b.Fatalf("read %d times, want once", o.listings)
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := look(dir)
			if err != nil || !f.log {
				b.Fatalf("%+v, %v", f, err)
			}
		}
	})
}

// dirNames lists every name of a folder whose entries fill its buffer
// many times over, and says a missing folder is missing.
func TestDirNames(t *testing.T) {
	dir := t.TempDir()
	want := map[string]bool{}
	for i := range 300 {
		name := fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 60))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	names, err := dirNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !want[n] {
			t.Errorf("listed %q, not made (or twice)", n)
		}
		delete(want, n)
	}
	if len(want) != 0 {
		t.Errorf("%d names not listed", len(want))
	}
	if _, err := dirNames(filepath.Join(dir, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing folder: %v, want fs.ErrNotExist", err)
	}
}
