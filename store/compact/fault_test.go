package compact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/storetest"
)

var errInjected = errors.New("injected: the disk failed")

// faulty fails one kind of change (op) to a file, the nth time it is
// made: a write, a sync or a truncate; a failing write writes half its
// bytes first. It counts in landed the faults it made.
func faulty(op string, nth int, landed *int) func(c change) (int, error) {
	seen := 0
	return func(c change) (int, error) {
		if c.op != op {
			return c.do()
		}
		if seen++; seen != nth {
			return c.do()
		}
		*landed++
		if c.op == "write" {
			n, _ := c.f.WriteAt(c.b[:len(c.b)/2], c.off)
			return n, errInjected
		}
		return 0, errInjected
	}
}

// TestDiskFails makes each change to each file fail once, in a fold or in
// an append: the Append that meets it fails, or its fold does and the
// next Append folds instead; an Append retried with the same bytes
// succeeds; and every event is read once, whatever failed.
func TestDiskFails(t *testing.T) {
	for _, tc := range []struct{ file, op string }{
		{FramesName, "write"},
		{FramesName, "sync"},
		{FramesName, "truncate"},
		{TailName, "write"},
		{TailName, "sync"},
		{TailName, "truncate"},
	} {
		for _, nth := range []int{1, 2, 3, 5} {
			name := tc.file + "/" + tc.op
			dir := t.TempDir()
			first := open(t, dir)
			first.foldEvents = 4
			fill(t, first, 1, 6)
			if tc.op == "truncate" && tc.file == FramesName {
				// Only a unit cut short is cut off events.zst: leave one.
				f, _ := os.OpenFile(filepath.Join(dir, FramesName), os.O_WRONLY|os.O_APPEND, 0)
				f.Write([]byte{0x28, 0xB5, 0x2F, 0xFD, 0x20})
				f.Close()
			}
			landed := 0
			d := &changeFS{FS: disk.OS, picks: named(tc.file), change: faulty(tc.op, nth, &landed)}
			var foldFailed int
			c, err := OpenOptions(dir, Options{FS: d, Folded: func(st FoldStats) {
				if st.Err != nil {
					foldFailed++
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.foldEvents = 4
			ctx := context.Background()
			failed := 0
			for seq := int64(7); seq <= 30; seq++ {
				ev := makeEvent(seq, sizeOf(seq))
				if err := c.Append(ctx, seq, ev); err != nil {
					if !errors.Is(err, errInjected) {
						t.Fatalf("%s #%d: append %d: %v", name, nth, seq, err)
					}
					failed++
					if err := c.Append(ctx, seq, ev); err != nil {
						t.Fatalf("%s #%d: append %d again: %v", name, nth, seq, err)
					}
				}
			}
			if landed != 1 {
				if tc.op == "truncate" && tc.file == FramesName && nth > 1 {
					continue // one cut only
				}
				t.Fatalf("%s #%d: the fault never landed", name, nth)
			}
			if failed+foldFailed == 0 {
				t.Fatalf("%s #%d: a fault landed and nothing failed", name, nth)
			}
			if got := collect(t, c, 1, false, 0); !equal(got, storetest.Span(1, 30)) {
				t.Fatalf("%s #%d: read %v", name, nth, got)
			}
			if got := collect(t, c, 0, true, 0); !equal(got, storetest.Span(30, 1)) {
				t.Fatalf("%s #%d: read back %v", name, nth, got)
			}
			fresh := open(t, dir)
			if got := collect(t, fresh, 1, false, 0); !equal(got, storetest.Span(1, 30)) {
				t.Fatalf("%s #%d: another reader read %v", name, nth, got)
			}
			t.Logf("%s #%d: landed; %d appends and %d folds failed", name, nth, failed, foldFailed)
		}
	}
}
