package compact

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// units returns the units of the frames zst.
func units(t *testing.T, zst []byte) []unit {
	t.Helper()
	src := &bytesSource{b: zst}
	tend, _, err := readThreadFrame(src)
	if err != nil {
		t.Fatal(err)
	}
	var us []unit
	if _, err := walkUnits(src, tend, func(u unit) bool { us = append(us, u); return true }); err != nil {
		t.Fatal(err)
	}
	return us
}

// smallEvent is the event of seq the damage tests write: small, so a
// frame is a few hundred bytes.
func smallEvent(seq int64) []byte { return makeEvent(seq, 5+int(seq%5)*10) }

// build writes events 1..n in dir and returns them, by seq - 1.
func build(t *testing.T, dir string, n int64) [][]byte {
	t.Helper()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var want [][]byte
	for seq := int64(1); seq <= n; seq++ {
		ev := smallEvent(seq)
		if err := c.Append(context.Background(), seq, ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	return want
}

// TestDamage damages a compact conversation as a person or a failing disk
// might. Each damage is reported as a *CorruptError naming the file and
// the offset, the events before it are read, and Repair keeps those,
// moves the rest beside, and the next Append works.
func TestDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int64
		// damage harms dir and returns the file and offset to report,
		// and where Repair cuts the file if not there
		damage func(t *testing.T, dir string) (string, int64, int64)
		kept   int64
	}{
		{"flipped byte in a seal", 100, func(t *testing.T, dir string) (string, int64, int64) {
			path := filepath.Join(dir, FramesName)
			zst := readFile(t, path)
			u := units(t, zst)[1]
			zst[u.off+u.n+12] ^= 0x01 // its count of events: zstd -dc still decodes it all
			os.WriteFile(path, zst, FileMode)
			return FramesName, u.off + u.n, u.off // Repair cuts the unit whose seal it is
		}, 32},
		{"truncated frame", 96, func(t *testing.T, dir string) (string, int64, int64) {
			path := filepath.Join(dir, FramesName)
			zst := readFile(t, path)
			u := units(t, zst)[2]
			os.WriteFile(path, zst[:u.off+u.n/2], FileMode)
			return FramesName, u.off, 0
		}, 64},
		{"middle tail line invalid json", 100, func(t *testing.T, dir string) (string, int64, int64) {
			path := filepath.Join(dir, TailName)
			tail := readFile(t, path)
			at := bytes.IndexByte(tail, '\n') + 1
			end := at + bytes.IndexByte(tail[at:], '\n')
			os.WriteFile(path, append(append(bytes.Clone(tail[:at]), `{"seq":98,"te`...), tail[end:]...), FileMode)
			return TailName, int64(at), 0
		}, 97},
		{"tail seq changed by hand", 100, func(t *testing.T, dir string) (string, int64, int64) {
			path := filepath.Join(dir, TailName)
			tail := readFile(t, path)
			at := bytes.IndexByte(tail, '\n') + 1
			copy(tail[at:], `{"seq":99`)
			os.WriteFile(path, tail, FileMode)
			return TailName, int64(at), 0
		}, 97},
		{"garbage line appended", 100, func(t *testing.T, dir string) (string, int64, int64) {
			path := filepath.Join(dir, TailName)
			tail := readFile(t, path)
			os.WriteFile(path, append(bytes.Clone(tail), "garbage\n"...), FileMode)
			return TailName, int64(len(tail)), 0
		}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := build(t, dir, tc.events)
			file, off, cutAt := tc.damage(t, dir)
			path := filepath.Join(dir, file)
			c := open(t, dir)
			ctx := context.Background()

			n, err := storetest.ReadAll(t, c, want)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) || ce.Path != path || ce.Offset != off {
				t.Fatalf("read: %v; want the corruption of %s at offset %d", err, path, off)
			}
			if n != tc.kept {
				t.Errorf("read %d events before the damage, want %d", n, tc.kept)
			}
			_, lerr := c.Last(ctx)
			berr := c.Read(ctx, 0, store.Backward, func(int64, []byte) bool { return true })
			if !errors.Is(errors.Join(lerr, berr), store.ErrCorrupt) {
				t.Errorf("last %v, read back %v: the damage unseen", lerr, berr)
			}

			r, err := c.Repair(ctx)
			if err != nil {
				t.Fatalf("repair: %v", err)
			}
			if cutAt != 0 {
				off = cutAt
			}
			if r.Kept != tc.kept || len(r.Cuts) == 0 || r.Cuts[0].From != file || r.Cuts[0].Offset != off {
				t.Fatalf("repaired %+v, want %d kept and %s cut at %d", r, tc.kept, file, off)
			}
			for _, cut := range r.Cuts {
				if kept := readFile(t, filepath.Join(dir, cut.To)); !bytes.HasPrefix(kept, []byte("# "+cut.From+" offset "+strconv.FormatInt(cut.Offset, 10)+", ")) {
					t.Errorf("%s holds %q", cut.To, kept[:min(80, len(kept))])
				}
			}
			next := tc.kept + 1
			if err := c.Append(ctx, next, smallEvent(next)); err != nil {
				t.Fatalf("append after repair: %v", err)
			}
			if n, err := storetest.ReadAll(t, c, append(want[:tc.kept:tc.kept], smallEvent(next))); err != nil || n != next {
				t.Fatalf("after repair read %d, %v", n, err)
			}
			if r, err := c.Repair(ctx); err != nil || r.Kept != next || r.Cuts != nil {
				t.Fatalf("repair of a whole conversation: %+v %v", r, err)
			}
		})
	}
}

// TestCorruptionCutsAndFlips cuts events.zst of a conversation of 100
// events at every offset, and flips random bytes of it, 10,000 times: no
// read panics, every event read is the one written at its seq (the frames
// carry zstd's checksum), damage is reported as store.ErrCorrupt, and
// after Repair the conversation reads whole and takes the next event.
func TestCorruptionCutsAndFlips(t *testing.T) {
	src := t.TempDir()
	want := build(t, src, 100)
	zst := readFile(t, filepath.Join(src, FramesName))
	tail := readFile(t, filepath.Join(src, TailName))
	dir := t.TempDir()
	ctx := context.Background()
	write := func(b []byte) {
		for _, name := range []string{FramesName, TailName, TornFramesName, TornTailName, DamagedFramesName, DamagedTailName} {
			os.Remove(filepath.Join(dir, name)) // new files: ext4 flushes a file truncated and written again when it is closed
		}
		os.WriteFile(filepath.Join(dir, FramesName), b, FileMode)
		os.WriteFile(filepath.Join(dir, TailName), tail, FileMode)
	}
	check := func(what string) (int64, error) {
		c, _ := Open(dir)
		defer c.Close()
		n := int64(0)
		err := c.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
			if seq != n+1 || seq > 100 || !bytes.Equal(ev, want[seq-1]) {
				t.Fatalf("%s: read seq %d after %d: %q, never written", what, seq, n, ev)
			}
			n = seq
			return true
		})
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%s: %v", what, err)
		}
		c.Read(ctx, 0, store.Backward, func(int64, []byte) bool { return true }) // must not panic
		c.Last(ctx)
		return n, err
	}
	repair := func(what string) {
		c, _ := Open(dir)
		defer c.Close()
		r, err := c.Repair(ctx)
		if err != nil {
			t.Fatalf("%s: repair: %v", what, err)
		}
		if n, err := check(what + " repaired"); err != nil || n != r.Kept {
			t.Fatalf("%s: repaired, %d kept, read %d: %v", what, r.Kept, n, err)
		}
		if err := c.Append(ctx, r.Kept+1, smallEvent(r.Kept+1)); err != nil {
			t.Fatalf("%s: append after repair: %v", what, err)
		}
	}

	for size := range len(zst) + 1 {
		write(zst[:size])
		what := "cut at " + strconv.Itoa(size)
		n, err := check(what)
		if size < len(zst) && err == nil {
			t.Fatalf("%s: read %d events and no damage, but the tail starts at 97", what, n)
		}
		if size%37 == 0 || size == len(zst) {
			repair(what)
		}
	}

	rng := rand.New(rand.NewPCG(storetest.Seed(t), 0))
	reported := 0
	for i := range 10000 {
		b := bytes.Clone(zst)
		off := rng.IntN(len(b))
		b[off] ^= byte(1 + rng.IntN(255))
		write(b)
		what := "flip " + strconv.Itoa(i) + " at " + strconv.Itoa(off)
		if _, err := check(what); err != nil {
			reported++
		}
		if i%100 == 0 {
			repair(what)
		}
	}
	t.Logf("10000 flips of events.zst: %d reported as corruption, the others left every event whole", reported)
}

// FuzzRepairDamage takes any bytes as events.zst and the tail and repairs
// them: the conversation then reads whole, Kept events from seq 1, and
// takes the next event.
func FuzzRepairDamage(f *testing.F) {
	src := f.TempDir()
	c, _ := Open(src)
	c.foldEvents = 4
	for seq := int64(1); seq <= 10; seq++ {
		if err := c.Append(context.Background(), seq, smallEvent(seq)); err != nil {
			f.Fatal(err)
		}
	}
	c.Close()
	zst, _ := os.ReadFile(filepath.Join(src, FramesName))
	tail, _ := os.ReadFile(filepath.Join(src, TailName))
	f.Add(zst, tail)
	f.Add(zst[:len(zst)/2], tail)
	flipped := bytes.Clone(zst)
	flipped[len(zst)-SealSize+12] ^= 1
	f.Add(flipped, tail)
	f.Add(zst, append(bytes.Clone(tail), "garbage\n{\"seq\":12"...))
	f.Add(zst[:20], tail)
	f.Fuzz(func(t *testing.T, zst, tail []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, FramesName), zst, FileMode)
		os.WriteFile(filepath.Join(dir, TailName), tail, FileMode)
		c := open(t, dir)
		ctx := context.Background()
		r, err := c.Repair(ctx)
		if err != nil {
			t.Fatalf("repair: %v", err)
		}
		n := int64(0)
		err = c.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
			if seq != n+1 {
				t.Fatalf("seq %d after %d", seq, n)
			}
			n = seq
			return true
		})
		if err != nil || n != r.Kept {
			t.Fatalf("after repair %+v: read %d: %v", r, n, err)
		}
		next := smallEvent(n + 1)
		if err := c.Append(ctx, n+1, next); err != nil {
			t.Fatalf("append after repair %+v: %v", r, err)
		}
	})
}
