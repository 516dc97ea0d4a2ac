package idempotency

import (
	"path/filepath"
	"testing"
)

// A told file kept open writes a marking with no read of its own: what it
// last read or wrote stands for the file. A marking at or below that is
// nothing; one past it is written. Written past it by path meanwhile, the
// next marking is written over that all the same (see Told).
func TestToldKept(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTold(dir, 5); err != nil {
		t.Fatal(err)
	}
	f, ok, err := OpenTold(dir)
	if !ok || err != nil {
		t.Fatalf("OpenTold: %v, %v", ok, err)
	}
	defer f.Close()
	if told, err := f.Read(); told != 5 || err != nil {
		t.Fatalf("Read: %d, %v; want 5", told, err)
	}
	steps := []struct {
		byPath int64 // written by path first, unless 0
		mark   int64
		want   int64 // the file's after
	}{
		{0, 4, 5},
		{0, 5, 5},
		{0, 7, 7},
		{9, 8, 8}, // remembered 7: 8 is written over the 9 by path
		{0, 8, 8},
		{0, 12, 12},
	}
	for i, s := range steps {
		if s.byPath != 0 {
			if err := WriteTold(dir, s.byPath); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := f.Write(s.mark); !ok || err != nil {
			t.Fatalf("step %d: Write(%d): %v, %v", i, s.mark, ok, err)
		}
		got, err := ReadTold(dir, t.TempDir())
		if err != nil || got != s.want {
			t.Errorf("step %d: marked %d, the file says %d (%v); want %d", i, s.mark, got, err, s.want)
		}
	}
}

// CreateTold makes the told file, in a folder not yet made too, and holds
// it open knowing what it wrote: the next marking writes with no read. A
// file already there is written by path, as WriteTold does, keeping a
// higher seq, and none is held.
func TestCreateTold(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	f, err := CreateTold(dir, 3)
	if err != nil || !f.IsOpen() {
		t.Fatalf("CreateTold in a folder not made: open %v, %v", f.IsOpen(), err)
	}
	if told, known := f.Known(); !known || told != 3 {
		t.Errorf("Known: %d, %v; want 3, true", told, known)
	}
	if ok, err := f.Write(7); !ok || err != nil {
		t.Fatalf("Write: %v, %v", ok, err)
	}
	f.Close()
	if told, _, err := ReadToldFile(filepath.Join(dir, ToldName)); told != 7 || err != nil {
		t.Fatalf("the file says %d, %v; want 7", told, err)
	}

	f, err = CreateTold(dir, 5)
	if err != nil || f.IsOpen() {
		t.Fatalf("CreateTold over a file: open %v, %v; want none held", f.IsOpen(), err)
	}
	if told, _, err := ReadToldFile(filepath.Join(dir, ToldName)); told != 7 || err != nil {
		t.Fatalf("after CreateTold of 5 the file says %d, %v; want 7 kept", told, err)
	}
}
