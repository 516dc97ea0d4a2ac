package osfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		size, most int
		want       int
	}{
		{0, 10, 0}, {1, 10, 1}, {10, 10, 10}, {11, 10, 11}, {5000, 10, 11}, {5000, 1 << 20, 5000},
	} {
		p := filepath.Join(dir, "f")
		data := bytes.Repeat([]byte("abcdefghij"), tc.size/10+1)[:tc.size]
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(p, tc.most)
		if err != nil || !bytes.Equal(b, data[:tc.want]) {
			t.Errorf("size %d, most %d: %d bytes, %v; want %d", tc.size, tc.most, len(b), err, tc.want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	var pe *fs.PathError
	if _, err := ReadFile(dir, 10); !errors.As(err, &pe) || pe.Path != dir {
		t.Errorf("a folder: %v, want a *fs.PathError naming it", err)
	}
}

func TestOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := Open(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("hello"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 5 {
		t.Errorf("stat %v %v", fi, err)
	}
	if _, err := Open(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("again with O_EXCL: %v, want fs.ErrExist", err)
	}
}

// BenchmarkReadFile reads a 2 KiB file the way a turn reads its settings:
// beside os.ReadFile.
func BenchmarkReadFile(b *testing.B) {
	p := filepath.Join(b.TempDir(), "config.json")
	os.WriteFile(p, bytes.Repeat([]byte("x"), 2048), 0o600)
	b.Run("osfile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadFile(p, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A bare descriptor opens, makes and reports a missing file as os.OpenFile
// does, and reads and writes at offsets.
func TestOpenFD(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if _, err := OpenFD(p, os.O_RDWR, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}
	fd, err := OpenFD(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if n, err := Pwrite(fd, []byte("hello world"), 3); n != 11 || err != nil {
		t.Fatalf("pwrite: %d, %v", n, err)
	}
	b := make([]byte, 32)
	n, err := Pread(fd, b, 9)
	if err != nil || string(b[:n]) != "world" {
		t.Fatalf("pread %q, %v; want the file's end, short", b[:n], err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 14 {
		t.Errorf("stat %v %v", fi, err)
	}
}
