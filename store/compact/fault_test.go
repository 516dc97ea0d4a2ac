package compact

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var errInjected = errors.New("injected: the disk failed")

// faultyDisk fails one kind of change to one file, the nth time it is
// made; a failing write writes half its bytes first.
type faultyDisk struct {
	osDisk
	file, op string
	nth      int
	seen     int
	landed   int
}

func (d *faultyDisk) fail(f *os.File, op string) bool {
	if filepath.Base(f.Name()) != d.file || op != d.op {
		return false
	}
	d.seen++
	if d.seen == d.nth {
		d.landed++
		return true
	}
	return false
}

func (d *faultyDisk) writeAt(f *os.File, b []byte, off int64) (int, error) {
	if d.fail(f, "write") {
		n, _ := f.WriteAt(b[:len(b)/2], off)
		return n, errInjected
	}
	return f.WriteAt(b, off)
}

func (d *faultyDisk) sync(f *os.File) error {
	if d.fail(f, "sync") {
		return errInjected
	}
	return d.osDisk.sync(f)
}

func (d *faultyDisk) truncate(f *os.File, size int64) error {
	if d.fail(f, "truncate") {
		return errInjected
	}
	return d.osDisk.truncate(f, size)
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
			d := &faultyDisk{file: tc.file, op: tc.op, nth: nth}
			dir := t.TempDir()
			c := open(t, dir)
			c.foldEvents = 4
			var foldFailed int
			c.opts.Folded = func(st FoldStats) {
				if st.Err != nil {
					foldFailed++
				}
			}
			fill(t, c, 1, 6)
			if tc.op == "truncate" && tc.file == FramesName {
				// Only a unit cut short is cut off events.zst: leave one.
				f, _ := os.OpenFile(filepath.Join(dir, FramesName), os.O_WRONLY|os.O_APPEND, 0)
				f.Write([]byte{0x28, 0xB5, 0x2F, 0xFD, 0x20})
				f.Close()
			}
			c.disk = d
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
			if d.landed != 1 {
				if tc.op == "truncate" && tc.file == FramesName && nth > 1 {
					continue // one cut only
				}
				t.Fatalf("%s #%d: the fault never landed", name, nth)
			}
			if failed+foldFailed == 0 {
				t.Fatalf("%s #%d: a fault landed and nothing failed", name, nth)
			}
			if got := collect(t, c, 1, false, 0); !equal(got, span(1, 30)) {
				t.Fatalf("%s #%d: read %v", name, nth, got)
			}
			if got := collect(t, c, 0, true, 0); !equal(got, span(30, 1)) {
				t.Fatalf("%s #%d: read back %v", name, nth, got)
			}
			fresh := open(t, dir)
			if got := collect(t, fresh, 1, false, 0); !equal(got, span(1, 30)) {
				t.Fatalf("%s #%d: another reader read %v", name, nth, got)
			}
			t.Logf("%s #%d: landed; %d appends and %d folds failed", name, nth, failed, foldFailed)
		}
	}
}
