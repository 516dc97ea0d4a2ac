package compact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// seedFrames returns events.zst of a conversation of n events folded
// every 3, and its tail.
func seedFrames(f *testing.F, n int64) (zst, tail []byte) {
	dir := f.TempDir()
	c, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	c.foldEvents = 3
	for seq := int64(1); seq <= n; seq++ {
		if err := c.Append(context.Background(), seq, makeEvent(seq, 40+int(seq)*7)); err != nil {
			f.Fatal(err)
		}
	}
	c.Close()
	zst, _ = os.ReadFile(filepath.Join(dir, FramesName))
	tail, _ = os.ReadFile(filepath.Join(dir, TailName))
	return zst, tail
}

// FuzzFrames reads events.zst and a tail of any bytes: it never panics,
// reports only corruption, and whatever it hands out is a gapless run of
// events, the same forward and back.
func FuzzFrames(f *testing.F) {
	for _, n := range []int64{0, 1, 2, 3, 7, 10} {
		zst, tail := seedFrames(f, n)
		f.Add(zst, tail)
		if len(zst) > 10 {
			f.Add(zst[:len(zst)-1], tail)
			f.Add(zst[:len(zst)-SealSize], tail)
			f.Add(zst[:len(zst)/2], tail)
			b := append([]byte(nil), zst...)
			b[len(b)/2] ^= 1
			f.Add(b, tail)
		}
	}
	f.Fuzz(func(t *testing.T, zst, tail []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FramesName), zst, FileMode); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, TailName), tail, FileMode); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		last, err := c.Last(ctx)
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Last: %v, not corruption", err)
			}
			return
		}
		n, top := storetest.ReadsWhole(t, c)
		if top != 0 && top != last {
			t.Fatalf("the read back started at %d, the last is %d", top, last)
		}
		if n >= 0 && int64(n) != last {
			t.Fatalf("last %d, but read %d", last, n)
		}
	})
}

// FuzzWalkFrame walks any bytes as a data frame: it never panics, and a
// length it gives fits the bytes.
func FuzzWalkFrame(f *testing.F) {
	zst, _ := seedFrames(f, 4)
	f.Add(zst)
	f.Add([]byte{0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x05, 0x01, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &bytesSource{b: b}
		n, content, err := walkFrame(s, 0)
		if err == nil && (n > int64(len(b)) || content < 0 || content > MaxFrameContent) {
			t.Fatalf("a frame of %d bytes, content %d, in %d bytes", n, content, len(b))
		}
		walkUnits(s, 0, func(unit) bool { return true })
	})
}
