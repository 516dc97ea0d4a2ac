package log

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// lineStarts returns the offset of each line of log, by seq - 1.
func lineStarts(log []byte) []int64 {
	var at []int64
	for off := 0; off < len(log); {
		at = append(at, int64(off))
		off += bytes.IndexByte(log[off:], '\n') + 1
	}
	return at
}

// TestDamage damages a log of 100 events as a person or a failing disk
// might. Each damage is reported as a *CorruptError naming the file and
// the offset of the damaged line, by Last or by a read, and the events
// before it are read; Repair keeps those, moves the rest to
// events.jsonl.damaged, and the next Append works. A torn final line is
// no damage: Append repairs it.
func TestDamage(t *testing.T) {
	var want [][]byte
	for seq := int64(1); seq <= 100; seq++ {
		want = append(want, makeEvent(seq, 100+int(seq%7)*40))
	}
	for _, tc := range []struct {
		name   string
		damage func(log []byte, at []int64) ([]byte, int64) // the damaged log and the damaged line's offset
		kept   int64
		torn   bool
	}{
		{"middle line invalid json", func(log []byte, at []int64) ([]byte, int64) {
			return splice(log, at[49], at[50], []byte(`{"seq":50,"time":"2026`+"\n")), at[49]
		}, 49, false},
		{"seq changed by hand", func(log []byte, at []int64) ([]byte, int64) {
			b := bytes.Clone(log)
			copy(b[at[49]:], `{"seq":51`)
			return b, at[49]
		}, 49, false},
		{"garbage line appended", func(log []byte, at []int64) ([]byte, int64) {
			return append(bytes.Clone(log), "garbage\n"...), int64(len(log))
		}, 100, false},
		{"event line appended twice", func(log []byte, at []int64) ([]byte, int64) {
			return append(bytes.Clone(log), log[at[99]:]...), int64(len(log))
		}, 100, false},
		{"first line damaged", func(log []byte, at []int64) ([]byte, int64) {
			b := bytes.Clone(log)
			b[0] = '['
			return b, 0
		}, 0, false},
		{"torn final line", func(log []byte, at []int64) ([]byte, int64) {
			return append(bytes.Clone(log), `{"seq":101,"ti`...), int64(len(log))
		}, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			var log []byte
			for _, ev := range want {
				log = append(append(log, ev...), '\n')
			}
			damaged, off := tc.damage(log, lineStarts(log))
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			c := open(t, dir)
			ctx := context.Background()

			n, err := storetest.ReadAll(t, c, want)
			if tc.torn {
				if err != nil || n != 100 {
					t.Fatalf("a torn final line: read %d, %v", n, err)
				}
				if err := c.Append(ctx, 101, makeEvent(101, 10)); err != nil {
					t.Fatalf("append after a torn final line: %v", err)
				}
				if !bytes.Contains(readFile(t, filepath.Join(dir, TornFileName)), []byte(`{"seq":101,"ti`)) {
					t.Error("the torn line is not kept")
				}
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) || ce.Path != path || ce.Offset != off {
				t.Fatalf("read: %v; want the corruption of %s at offset %d", err, path, off)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "offset") {
				t.Errorf("the error %q does not say where", err)
			}
			if n != tc.kept {
				t.Errorf("read %d events before the damage, want %d", n, tc.kept)
			}
			// A turn reads the end first, then back from it: the damage
			// stops it, and nothing is written.
			_, lerr := c.Last(ctx)
			_, berr := collect(c, 0, true, 0)
			if !errors.Is(errors.Join(lerr, berr), store.ErrCorrupt) {
				t.Errorf("last %v, read back %v: the damage unseen", lerr, berr)
			}

			r, err := c.Repair(ctx)
			if err != nil {
				t.Fatalf("repair: %v", err)
			}
			cut := Cut{From: FileName, Offset: off, Bytes: int64(len(damaged)) - off, To: DamagedFileName, Why: ce.Problem}
			if r.Kept != tc.kept || len(r.Cuts) != 1 || r.Cuts[0] != cut {
				t.Fatalf("repaired %+v, want %d kept and %+v", r, tc.kept, cut)
			}
			if got := readFile(t, path); !bytes.Equal(got, damaged[:off]) {
				t.Errorf("the log after repair is not what was whole")
			}
			kept := readFile(t, filepath.Join(dir, DamagedFileName))
			head, body, _ := bytes.Cut(kept, []byte("\n"))
			if !bytes.HasPrefix(head, []byte("# events.jsonl offset ")) || !bytes.HasSuffix(head, []byte(ce.Problem)) || !bytes.Equal(body, append(bytes.Clone(damaged[off:]), '\n')) {
				t.Errorf("events.jsonl.damaged holds\n%s", kept)
			}
			next := tc.kept + 1
			if err := c.Append(ctx, next, makeEvent(next, 10)); err != nil {
				t.Fatalf("append after repair: %v", err)
			}
			if n, err := storetest.ReadAll(t, c, append(want[:tc.kept:tc.kept], makeEvent(next, 10))); err != nil || n != next {
				t.Fatalf("after repair read %d, %v", n, err)
			}
			// Whole, it is left alone.
			if r, err := c.Repair(ctx); err != nil || r.Kept != next || r.Cuts != nil {
				t.Fatalf("repair of a whole log: %+v %v", r, err)
			}
		})
	}
}

func splice(b []byte, from, to int64, with []byte) []byte {
	out := append(bytes.Clone(b[:from]), with...)
	return append(out, b[to:]...)
}

// TestCorruptionCutsAndFlips cuts a log of 100 events at every offset, and flips
// random bytes of it, 10,000 times: no read panics, every event read is
// the one written at its seq (but for a flipped byte inside a line that is
// still an event of that seq, which only a checksum would see: counted),
// damage is reported as store.ErrCorrupt, and after Repair the log reads
// whole and takes the next event.
func TestCorruptionCutsAndFlips(t *testing.T) {
	var want [][]byte
	var log []byte
	for seq := int64(1); seq <= 100; seq++ {
		ev := makeEvent(seq, 5+int(seq%5)*10)
		want = append(want, ev)
		log = append(append(log, ev...), '\n')
	}
	at := lineStarts(log)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	ctx := context.Background()
	// check reads the log in dir back, forward and from the end, and
	// returns how many events it read and the error; flipped is the offset
	// of a flipped byte, or -1.
	check := func(what string, flipped int64) (int64, error) {
		c, _ := Open(dir)
		defer c.Close()
		n := int64(0)
		err := c.Read(ctx, 1, false, func(seq int64, ev []byte) bool {
			if seq != n+1 || seq > 100 {
				t.Fatalf("%s: seq %d after %d", what, seq, n)
			}
			if !bytes.Equal(ev, want[seq-1]) {
				// Only the line of the flipped byte may differ, and only
				// by it.
				line := at[seq-1]
				if flipped < line || flipped >= line+int64(len(ev)) || len(ev) != len(want[seq-1]) {
					t.Fatalf("%s: seq %d read as %q, never written", what, seq, ev)
				}
			}
			n = seq
			return true
		})
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%s: %v", what, err)
		}
		c.Read(ctx, 0, true, func(int64, []byte) bool { return true }) // must not panic
		c.Last(ctx)
		return n, err
	}
	// repair repairs the log in dir, which then reads whole with the
	// events it kept and takes the next.
	repair := func(what string, flipped int64) {
		c, _ := Open(dir)
		defer c.Close()
		r, err := c.Repair(ctx)
		if err != nil {
			t.Fatalf("%s: repair: %v", what, err)
		}
		if n, err := check(what+" repaired", flipped); err != nil || n != r.Kept {
			t.Fatalf("%s: repaired, %d kept, read %d: %v", what, r.Kept, n, err)
		}
		if err := c.Append(ctx, r.Kept+1, makeEvent(r.Kept+1, 5)); err != nil {
			t.Fatalf("%s: append after repair: %v", what, err)
		}
	}
	write := func(b []byte) {
		os.Remove(filepath.Join(dir, TornFileName))
		os.Remove(filepath.Join(dir, DamagedFileName))
		os.Remove(path) // a new file: ext4 flushes a file truncated and written again when it is closed
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for size := range len(log) + 1 {
		write(log[:size])
		what := "cut at " + itoa(size)
		n, err := check(what, -1)
		whole := int64(0)
		for whole < 100 && at[whole]+int64(len(want[whole]))+1 <= int64(size) {
			whole++
		}
		if err != nil || n != whole {
			t.Fatalf("%s: read %d of %d whole, %v", what, n, whole, err)
		}
		if size%101 == 0 || size == len(log) {
			repair(what, -1) // each Repair syncs: a sample of the offsets
		}
	}

	rng := rand.New(rand.NewPCG(storetest.Seed(t), 0))
	unseen, reported := 0, 0
	for i := range 10000 {
		b := bytes.Clone(log)
		off := rng.IntN(len(b))
		b[off] ^= byte(1 + rng.IntN(255))
		write(b)
		what := "flip " + itoa(i) + " at " + itoa(off)
		_, err := check(what, int64(off))
		if err != nil {
			reported++
		} else {
			unseen++
		}
		if i%100 == 0 {
			repair(what, int64(off))
		}
	}
	t.Logf("10000 flips: %d reported as corruption, %d read as an event of the right seq (no checksum sees them)", reported, unseen)
}

func itoa(n int) string { return strconv.Itoa(n) }

// FuzzRepairDamage takes any bytes as a log and repairs it: Repair keeps
// a prefix of the bytes, which then reads whole, Kept events, each the
// line at its offset, and takes the next event.
func FuzzRepairDamage(f *testing.F) {
	f.Add([]byte("{\"seq\":1}\n{\"seq\":3}\n"))
	f.Add(append(makeEvent(1, 5), "\ngarbage\n{\"seq\":2"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c := open(t, dir)
		ctx := context.Background()
		r, err := c.Repair(ctx)
		if err != nil {
			t.Fatalf("repair: %v", err)
		}
		after := readFile(t, path)
		if !bytes.HasPrefix(data, after) {
			t.Fatal("repair left bytes that were not the log's first")
		}
		n := int64(0)
		off := 0
		err = c.Read(ctx, 1, false, func(seq int64, ev []byte) bool {
			if seq != n+1 || !bytes.Equal(ev, after[off:off+len(ev)]) {
				t.Fatalf("seq %d read as %q", seq, ev)
			}
			off += len(ev) + 1
			n = seq
			return true
		})
		if err != nil || n != r.Kept || off != len(after) {
			t.Fatalf("after repair: read %d of %d kept, to offset %d of %d: %v", n, r.Kept, off, len(after), err)
		}
		if err := c.Append(ctx, n+1, makeEvent(n+1, 3)); err != nil {
			t.Fatalf("append after repair: %v", err)
		}
	})
}
