package disk_test

import (
	"os"
	"testing"

	"lnk.dev/linkharness/store/internal/disk"
)

// TestMemImageApart: a crash image that is emptied, synced and written
// again, as a compact conversation's tail is at each fold, changes no byte
// of the Mem it came from, nor of another image; nor does the Mem, done
// the same, change its images.
func TestMemImageApart(t *testing.T) {
	const name = "/d/f"
	refill := func(f disk.File) {
		t.Helper()
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("XY"), 0); err != nil {
			t.Fatal(err)
		}
	}
	read := func(f disk.File) string {
		t.Helper()
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, st.Size)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	openOn := func(m *disk.Mem) disk.File {
		f, err := m.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	// An image written to.
	m, f := memWith(t, "abcdef")
	img, other := m.Crash(), m.Crash()
	refill(openOn(img))
	if got := read(f); got != "abcdef" {
		t.Errorf("the Mem reads %q after its image was emptied and written, want abcdef", got)
	}
	if got := read(openOn(m.Crash())); got != "abcdef" {
		t.Errorf("a new image reads %q, want abcdef", got)
	}
	if got := read(openOn(other)); got != "abcdef" {
		t.Errorf("another image reads %q, want abcdef", got)
	}

	// The Mem written to.
	m, f = memWith(t, "abcdef")
	img = m.Crash()
	refill(f)
	if got := read(openOn(img)); got != "abcdef" {
		t.Errorf("an image reads %q after its Mem was emptied and written, want abcdef", got)
	}
}
