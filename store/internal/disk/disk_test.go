package disk_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/storetest"
)

// The checks every FS passes: the real one and Mem do the same where
// both say they do.
func TestConformance(t *testing.T) {
	t.Run("os", func(t *testing.T) { conform(t, disk.OS, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		m := disk.NewMem()
		dir := "/home/chats/t"
		if err := m.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		conform(t, m, dir)
	})
}

var bg = context.Background()

func conform(t *testing.T, fsys disk.FS, dir string) {
	path := filepath.Join(dir, "f")
	t.Run("missing", func(t *testing.T) {
		if _, err := fsys.OpenFile(path+".none", os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("open a missing file: %v, want fs.ErrNotExist", err)
		}
		if _, err := fsys.Stat(path + ".none"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stat a missing file: %v, want fs.ErrNotExist", err)
		}
		if _, err := fsys.OpenFile(filepath.Join(dir, "no", "f"), os.O_RDWR|os.O_CREATE, 0o600); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("create in a missing folder: %v, want fs.ErrNotExist", err)
		}
		if err := fsys.SyncDir(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("sync a missing folder: %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("readwrite", func(t *testing.T) {
		f := open(t, fsys, path, os.O_RDWR|os.O_CREATE)
		defer f.Close()
		if f.Name() != path {
			t.Errorf("name %q, want %q", f.Name(), path)
		}
		if _, err := f.WriteAt([]byte("hello, world"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("W"), 7); err != nil {
			t.Fatal(err)
		}
		wantBytes(t, f, "hello, World")
		b := make([]byte, 8)
		if n, err := f.ReadAt(b, 8); n != 4 || err != io.EOF || string(b[:n]) != "orld" {
			t.Errorf("read past the end: %d %q %v, want 4 \"orld\" io.EOF", n, b[:n], err)
		}
		if n, err := f.ReadAt(b, 100); n != 0 || err != io.EOF {
			t.Errorf("read from past the end: %d %v, want 0 io.EOF", n, err)
		}
		if err := f.Truncate(5); err != nil {
			t.Fatal(err)
		}
		wantBytes(t, f, "hello")
		if _, err := f.WriteAt([]byte("!"), 7); err != nil {
			t.Fatal(err)
		}
		wantBytes(t, f, "hello\x00\x00!")
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := fsys.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		info, err := fsys.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() != 8 || info.IsDir() || info.Mode().Perm() != 0o600 || info.Name() != "f" {
			t.Errorf("stat: size %d dir %v mode %v name %q, want 8 false 0600 f", info.Size(), info.IsDir(), info.Mode(), info.Name())
		}
		if info, err := fsys.Stat(dir); err != nil || !info.IsDir() {
			t.Errorf("stat the folder: %v %v, want a folder", info, err)
		}
	})
	t.Run("append", func(t *testing.T) {
		name := path + ".torn"
		for _, s := range []string{"ab", "cd"} {
			f := open(t, fsys, name, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
			if _, err := f.Write([]byte(s[:1])); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte(s[1:])); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("x"), 0); err == nil {
				t.Error("WriteAt on a file opened to append: no error")
			}
			if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
				t.Error("ReadAt on a file opened write-only: no error")
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
		r := open(t, fsys, name, os.O_RDONLY)
		defer r.Close()
		wantBytes(t, r, "abcd")
		if _, err := r.WriteAt([]byte("x"), 0); err == nil {
			t.Error("WriteAt on a file opened read-only: no error")
		}
		if err := r.Truncate(0); err == nil {
			t.Error("Truncate on a file opened read-only: no error")
		}
	})
	t.Run("closed", func(t *testing.T) {
		f := open(t, fsys, path, os.O_RDWR|os.O_CREATE)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("read a closed file: %v, want fs.ErrClosed", err)
		}
		if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("write a closed file: %v, want fs.ErrClosed", err)
		}
		if err := f.Close(); err == nil {
			t.Error("close twice: no error")
		}
	})
	t.Run("flock", func(t *testing.T) {
		a := open(t, fsys, path, os.O_RDWR|os.O_CREATE)
		defer a.Close()
		b := open(t, fsys, path, os.O_RDONLY)
		defer b.Close()
		done, cancel := context.WithCancel(bg)
		cancel()
		lock := func(f disk.File, exclusive bool, want error) {
			t.Helper()
			if err := f.Lock(done, exclusive); err != want {
				t.Errorf("lock exclusive=%v: %v, want %v", exclusive, err, want)
			}
		}
		// A free flock is taken even with ctx done; a held one is not
		// waited for.
		lock(a, true, nil)
		lock(a, true, nil)
		lock(b, true, context.Canceled)
		lock(b, false, context.Canceled)
		a.Unlock()
		lock(b, false, nil)
		lock(a, false, nil)
		a.Unlock()
		lock(a, true, context.Canceled)
		b.Unlock()
		lock(a, true, nil)

		// A waiter gets the flock when its holder lets go, or when its
		// holder closes the file.
		got := make(chan error)
		go func() { got <- b.Lock(bg, true) }()
		a.Unlock()
		if err := <-got; err != nil {
			t.Fatalf("wait for the flock: %v", err)
		}
		go func() { got <- a.Lock(bg, false) }()
		b.Close()
		if err := <-got; err != nil {
			t.Fatalf("wait for the flock closed: %v", err)
		}

		// A waiter stops when its ctx is cancelled.
		c := open(t, fsys, path, os.O_RDONLY)
		defer c.Close()
		ctx, stop := context.WithCancel(bg)
		go func() { got <- c.Lock(ctx, true) }()
		stop()
		if err := <-got; err != context.Canceled {
			t.Errorf("cancelled wait: %v, want context.Canceled", err)
		}
	})
	t.Run("stat", func(t *testing.T) {
		f := open(t, fsys, path, os.O_RDWR|os.O_CREATE)
		defer f.Close()
		if err := f.Truncate(3); err != nil {
			t.Fatal(err)
		}
		info, err := f.Stat()
		if err != nil || info.Size != 3 {
			t.Errorf("stat: %+v %v, want size 3", info, err)
		}
	})
}

func open(t *testing.T, fsys disk.FS, name string, flag int) disk.File {
	t.Helper()
	f, err := fsys.OpenFile(name, flag, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func wantBytes(t *testing.T, f disk.File, want string) {
	t.Helper()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, info.Size)
	if n, err := f.ReadAt(b, 0); n != len(b) || err != nil && err != io.EOF {
		t.Fatalf("read %d of %d: %v", n, len(b), err)
	}
	if string(b) != want {
		t.Errorf("the file holds %q, want %q", b, want)
	}
}

// memWith returns a Mem with the folder /d and the file /d/f holding s,
// synced and named durably.
func memWith(t *testing.T, s string) (*disk.Mem, disk.File) {
	t.Helper()
	m := disk.NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	f := open(t, m, "/d/f", os.O_RDWR|os.O_CREATE)
	if _, err := f.WriteAt([]byte(s), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	return m, f
}

// crashed returns what the file name holds in m's crash image, or false
// when it is gone.
func crashed(t *testing.T, m *disk.Mem, name string) (string, bool) {
	t.Helper()
	b, err := m.Crash().ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestMemCrash(t *testing.T) {
	m := disk.NewMem()
	if err := m.MkdirAll("/d/e"); err != nil {
		t.Fatal(err)
	}
	f := open(t, m, "/d/e/f", os.O_RDWR|os.O_CREATE)
	if _, ok := crashed(t, m, "/d/e/f"); ok {
		t.Error("a file never synced survives a crash")
	}
	f.WriteAt([]byte("one"), 0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, ok := crashed(t, m, "/d/e/f"); ok {
		t.Error("a file whose folder was not synced survives a crash")
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, ok := crashed(t, m, "/d/e/f"); ok {
		t.Error("a file survives a crash when only the folder above its own was synced")
	}
	if err := m.SyncDir("/d/e"); err != nil {
		t.Fatal(err)
	}
	if s, ok := crashed(t, m, "/d/e/f"); !ok || s != "one" {
		t.Errorf("after sync and folder sync the image holds %q %v, want \"one\"", s, ok)
	}
	f.WriteAt([]byte("two, three"), 0)
	if s, _ := crashed(t, m, "/d/e/f"); s != "one" {
		t.Errorf("an unsynced write shows in the image: %q", s)
	}
	f.Truncate(1)
	if s, _ := crashed(t, m, "/d/e/f"); s != "one" {
		t.Errorf("an unsynced truncate shows in the image: %q", s)
	}
	f.Sync()
	if s, _ := crashed(t, m, "/d/e/f"); s != "t" {
		t.Errorf("a synced truncate: the image holds %q, want \"t\"", s)
	}

	// The image is a Mem of its own, with its folders.
	c := m.Crash()
	g := open(t, c, "/d/e/f", os.O_RDWR)
	g.WriteAt([]byte("image"), 0)
	wantBytes(t, f, "t")
	wantBytes(t, g, "image")
	if info, err := c.Stat("/d/e"); err != nil || !info.IsDir() {
		t.Errorf("the image lost the folder: %v %v", info, err)
	}
	if c.Ops() != 2 {
		t.Errorf("the image counted %d operations, want 2 (its open and write)", c.Ops())
	}
}

func TestMemSkipSyncDir(t *testing.T) {
	m := disk.NewMem()
	m.MkdirAll("/d")
	m.SkipSyncDir(true)
	f := open(t, m, "/d/f", os.O_RDWR|os.O_CREATE)
	f.WriteAt([]byte("x"), 0)
	f.Sync()
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, ok := crashed(t, m, "/d/f"); ok {
		t.Error("with SyncDir skipped a new file survives a crash")
	}
	m.SkipSyncDir(false)
	m.SyncDir("/d")
	if s, ok := crashed(t, m, "/d/f"); !ok || s != "x" {
		t.Errorf("image %q %v, want \"x\"", s, ok)
	}
}

func TestMemFail(t *testing.T) {
	t.Run("once", func(t *testing.T) {
		m, f := memWith(t, "abc")
		base := m.Ops()
		m.Fail(disk.Plan{At: base + 2, Err: syscall.EIO})
		if _, err := f.WriteAt([]byte("d"), 3); err != nil {
			t.Fatalf("op before the fault: %v", err)
		}
		_, err := f.WriteAt([]byte("e"), 4)
		var pe *fs.PathError
		if !errors.Is(err, syscall.EIO) || !errors.As(err, &pe) || pe.Path != "/d/f" {
			t.Errorf("the faulted write: %v, want a *fs.PathError of /d/f wrapping EIO", err)
		}
		if _, err := f.WriteAt([]byte("f"), 4); err != nil {
			t.Errorf("op after the fault: %v", err)
		}
		wantBytes(t, f, "abcdf")
		if m.Faults() != 1 || m.Ops() != base+3 {
			t.Errorf("faults %d ops %d, want 1 and %d", m.Faults(), m.Ops(), base+3)
		}
	})
	t.Run("every", func(t *testing.T) {
		m, f := memWith(t, "abc")
		m.Fail(disk.Plan{At: m.Ops() + 1, Every: true, Err: syscall.ENOSPC})
		b := make([]byte, 3)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Errorf("a read failed: %v", err)
		}
		if _, err := m.OpenFile("/d/f", os.O_RDONLY, 0); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("open: %v, want ENOSPC", err)
		}
		if err := f.Truncate(0); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("truncate: %v, want ENOSPC", err)
		}
		if err := f.Sync(); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("sync: %v, want ENOSPC", err)
		}
		if err := m.SyncDir("/d"); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("syncdir: %v, want ENOSPC", err)
		}
		if m.Faults() != 4 {
			t.Errorf("faults %d, want 4", m.Faults())
		}
		m.Fail(disk.Plan{})
		if err := f.Sync(); err != nil {
			t.Errorf("sync with the plan cleared: %v", err)
		}
	})
	t.Run("short", func(t *testing.T) {
		m, f := memWith(t, "")
		m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.ENOSPC, Short: true})
		if n, err := f.WriteAt([]byte("abcd"), 0); n != 2 || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("short write: %d %v, want 2 ENOSPC", n, err)
		}
		wantBytes(t, f, "ab")
	})
	t.Run("sync drops", func(t *testing.T) {
		m, f := memWith(t, "abc")
		f.WriteAt([]byte("def"), 3)
		m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.EIO})
		before, _ := f.Stat()
		if err := f.Sync(); !errors.Is(err, syscall.EIO) {
			t.Errorf("sync: %v, want EIO", err)
		}
		wantBytes(t, f, "abc")
		if after, _ := f.Stat(); after.Changed == before.Changed {
			t.Error("dropping the unsynced bytes left the change stamp as it was")
		}
		if s, _ := crashed(t, m, "/d/f"); s != "abc" {
			t.Errorf("image %q, want \"abc\"", s)
		}
	})
	t.Run("sync keeps", func(t *testing.T) {
		// As Linux's page cache: the bytes stay to be read, and are not
		// on the disk even after a later Sync, until written again.
		m, f := memWith(t, "abc")
		f.WriteAt([]byte("def"), 3)
		f.WriteAt([]byte("B"), 1)
		m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.EIO, Keep: true})
		before, _ := f.Stat()
		if err := f.Sync(); !errors.Is(err, syscall.EIO) {
			t.Errorf("sync: %v, want EIO", err)
		}
		wantBytes(t, f, "aBcdef")
		if after, _ := f.Stat(); after != before {
			t.Errorf("keeping the bytes changed the file's size or stamp: %+v, was %+v", after, before)
		}
		if s, _ := crashed(t, m, "/d/f"); s != "abc" {
			t.Errorf("image %q, want \"abc\"", s)
		}
		m.Fail(disk.Plan{})
		if err := f.Sync(); err != nil {
			t.Fatalf("sync with the plan cleared: %v", err)
		}
		wantBytes(t, f, "aBcdef")
		if s, _ := crashed(t, m, "/d/f"); s != "abc\x00\x00\x00" {
			t.Errorf("a later good sync: image %q, want the size durable and not the bytes, \"abc\\x00\\x00\\x00\"", s)
		}
		// Each write below, then a good sync: what the image holds.
		for _, step := range []struct {
			what  string
			write func()
			want  string
		}{
			{"one byte written again", func() { f.WriteAt([]byte("E"), 4) }, "abc\x00E\x00"},
			{"cut and written again", func() {
				f.Truncate(4)
				f.WriteAt([]byte("XY"), 4)
			}, "abc\x00XY"},
			{"all written again", func() { f.WriteAt([]byte("aBcd"), 0) }, "aBcdXY"},
		} {
			step.write()
			f.Sync()
			if s, _ := crashed(t, m, "/d/f"); s != step.want {
				t.Errorf("%s: image %q, want %q", step.what, s, step.want)
			}
		}
		// The image starts with nothing lost: its page cache is gone.
		c := m.Crash()
		g := open(t, c, "/d/f", os.O_RDWR)
		g.Sync()
		if s, _ := crashed(t, c, "/d/f"); s != "aBcdXY" {
			t.Errorf("the image synced: %q, want \"aBcdXY\"", s)
		}
	})
	t.Run("syncdir", func(t *testing.T) {
		m := disk.NewMem()
		m.MkdirAll("/d")
		f := open(t, m, "/d/f", os.O_RDWR|os.O_CREATE)
		f.Sync()
		m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.EIO})
		if err := m.SyncDir("/d"); !errors.Is(err, syscall.EIO) {
			t.Errorf("syncdir: %v, want EIO", err)
		}
		if _, ok := crashed(t, m, "/d/f"); ok {
			t.Error("a failed SyncDir made the name durable")
		}
	})
}

func TestMemOnOp(t *testing.T) {
	m := disk.NewMem()
	m.MkdirAll("/d")
	var ops []disk.Op
	var images []bool
	m.OnOp(func(op disk.Op) {
		ops = append(ops, op)
		// Crash from inside the callback: no lock is held.
		_, ok := crashed(t, m, "/d/f")
		images = append(images, ok)
	})
	f := open(t, m, "/d/f", os.O_RDWR|os.O_CREATE)
	f.WriteAt([]byte("x"), 0)
	f.ReadAt(make([]byte, 1), 0)
	f.Stat()
	f.Lock(bg, true)
	f.Unlock()
	f.Truncate(0)
	f.Sync()
	m.Fail(disk.Plan{At: 6, Err: syscall.EIO})
	m.SyncDir("/d")
	m.SyncDir("/d")
	m.OnOp(nil)
	f.Sync()
	want := []disk.Kind{disk.OpOpen, disk.OpWrite, disk.OpTruncate, disk.OpSync, disk.OpSyncDir, disk.OpSyncDir}
	if len(ops) != len(want) {
		t.Fatalf("%d operations reported, want %d: %v", len(ops), len(want), ops)
	}
	for i, op := range ops {
		if op.N != i+1 || op.Kind != want[i] || (op.Err != nil) != (i == 5) || op.Fault != (i == 5) {
			t.Errorf("op %d: %+v, want N %d kind %v", i, op, i+1, want[i])
		}
	}
	if !bytes.Equal(boolBytes(images), boolBytes([]bool{false, false, false, false, true, true})) {
		t.Errorf("the file in the images after each op: %v", images)
	}
	if m.Ops() != 7 {
		t.Errorf("ops %d, want 7", m.Ops())
	}
}

func boolBytes(b []bool) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		if v {
			out[i] = 1
		}
	}
	return out
}

func TestMemFolders(t *testing.T) {
	m := disk.NewMem()
	if _, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("create before MkdirAll: %v, want fs.ErrNotExist", err)
	}
	m.MkdirAll("/d")
	f := open(t, m, "/d/f", os.O_RDWR|os.O_CREATE)
	f.Close()
	if err := m.MkdirAll("/d/f/g"); err == nil {
		t.Error("MkdirAll through a file: no error")
	}
	if _, err := m.OpenFile("/d", os.O_RDONLY, 0); err == nil {
		t.Error("open a folder: no error")
	}
	if _, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("create with O_EXCL over a file: %v, want fs.ErrExist", err)
	}
}

// TestMemModel runs random writes, truncates, syncs, failed syncs of both
// kinds and crashes on a Mem and on plain copies of the bytes, which Mem
// must match: it shares synced bytes between a file, its images and its
// next writes, and keeps spans a failed Sync left readable.
func TestMemModel(t *testing.T) {
	seed := storetest.Seed(t)
	r := rand.New(rand.NewPCG(seed, seed))
	m, f := memWith(t, "")
	// lost[i] says data[i] was kept readable by a failed Sync and not
	// written since: a Sync leaves synced's byte there, or a zero.
	var data, synced []byte
	var lost []bool
	resize := func(size int) {
		if size > len(data) {
			data = append(data, make([]byte, size-len(data))...)
			lost = append(lost, make([]bool, size-len(lost))...)
		}
		data, lost = data[:size], lost[:size]
	}
	for i := 0; i < 3000; i++ {
		switch r.IntN(7) {
		case 0, 1:
			b := make([]byte, 1+r.IntN(20))
			for j := range b {
				b[j] = byte('a' + r.IntN(26))
			}
			off := int64(r.IntN(len(data) + 5))
			if _, err := f.WriteAt(b, off); err != nil {
				t.Fatal(err)
			}
			resize(max(len(data), int(off)+len(b)))
			copy(data[off:], b)
			clear(lost[off : int(off)+len(b)])
		case 2:
			size := r.IntN(len(data) + 5)
			if err := f.Truncate(int64(size)); err != nil {
				t.Fatal(err)
			}
			resize(size)
		case 3:
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			now := append([]byte(nil), data...)
			for j, l := range lost {
				if l {
					now[j] = 0
					if j < len(synced) {
						now[j] = synced[j]
					}
				}
			}
			synced = now
		case 4:
			m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.EIO})
			if err := f.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("sync: %v, want EIO", err)
			}
			data = append([]byte(nil), synced...)
			lost = make([]bool, len(data))
		case 6:
			m.Fail(disk.Plan{At: m.Ops() + 1, Err: syscall.EIO, Keep: true})
			if err := f.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("sync: %v, want EIO", err)
			}
			for j := range data {
				if j >= len(synced) || data[j] != synced[j] {
					lost[j] = true
				}
			}
		case 5:
			// Go on with the image half the time: it must be what was
			// synced, and its writes must not reach the Mem it came from.
			if s, _ := crashed(t, m, "/d/f"); s != string(synced) {
				t.Fatalf("step %d: image %q, want %q", i, s, synced)
			}
			if r.IntN(2) == 0 {
				f.Close()
				m = m.Crash()
				f = open(t, m, "/d/f", os.O_RDWR)
				data = append([]byte(nil), synced...)
				lost = make([]bool, len(data))
			}
		}
		wantBytes(t, f, string(data))
		if t.Failed() {
			t.Fatalf("step %d", i)
		}
	}
}

func TestMemCrashTorn(t *testing.T) {
	m, f := memWith(t, "abcd")
	if s, _ := crashed(t, m.CrashTorn(), "/d/f"); s != "abcd" {
		t.Errorf("nothing appended: the torn image holds %q, want \"abcd\"", s)
	}
	f.WriteAt([]byte("efgh"), 4)
	c := m.CrashTorn()
	if s, _ := crashed(t, c, "/d/f"); s != "abcdef" {
		t.Errorf("appended to: the torn image holds %q, want \"abcdef\"", s)
	}
	if s, _ := crashed(t, m, "/d/f"); s != "abcd" {
		t.Errorf("the plain image holds %q, want \"abcd\"", s)
	}
	f.WriteAt([]byte("X"), 0)
	if s, _ := crashed(t, m.CrashTorn(), "/d/f"); s != "abcd" {
		t.Errorf("changed in place: the torn image holds %q, want \"abcd\"", s)
	}
	// The torn image's bytes are its own.
	wantBytes(t, f, "Xbcdefgh")
	g := open(t, c, "/d/f", os.O_RDWR)
	g.WriteAt([]byte("Y"), 5)
	wantBytes(t, g, "abcdeY")
	wantBytes(t, f, "Xbcdefgh")
}

func TestMemTorn(t *testing.T) {
	m, f := memWith(t, "ab")
	if m.Torn() {
		t.Error("Torn with nothing appended")
	}
	f.WriteAt([]byte("c"), 2)
	if m.Torn() {
		t.Error("Torn with one byte appended: half of it is none")
	}
	f.WriteAt([]byte("d"), 3)
	if !m.Torn() {
		t.Error("not Torn with two bytes appended")
	}
	f.Sync()
	if m.Torn() {
		t.Error("Torn after a Sync")
	}
}
