package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// FuzzRepair takes any bytes as a log and appends to it. The append either
// succeeds, leaving the complete lines it found as they were, then the new
// event, with a torn tail (if there was one) kept beside; or fails with
// store.ErrCorrupt, ErrGap or ErrSeqTaken and leaves the file alone. A log
// that read back whole before reads back whole after, one event longer.
// Reads of any log end cleanly or report corruption, and hand out
// contiguous seqs.
func FuzzRepair(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, how uint8) {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		whole, _ := storetest.ReadsWhole(t, c)

		last, lastErr := c.Last(ctx)
		if lastErr != nil && !errors.Is(lastErr, store.ErrCorrupt) {
			t.Fatalf("Last: %v", lastErr)
		}
		var seq int64
		switch how % 4 {
		case 0:
			seq = last + 1
		case 1:
			seq = max(last, 1)
		case 2:
			seq = last + 2
		case 3:
			seq = 1
		}
		ev := makeEvent(seq, int(how))
		if _, err := event.SeqOf(ev); err != nil {
			return // past the largest seq an event can hold: a bad event, tested elsewhere
		}
		err = c.Append(ctx, seq, ev)
		after := readFile(t, path)
		kept := readFile(t, filepath.Join(dir, TornFileName))
		if err != nil {
			if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrGap) && !errors.Is(err, store.ErrSeqTaken) {
				t.Fatalf("Append(%d): %v", seq, err)
			}
			if lastErr != nil && !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Last found corruption, Append(%d) says %v", seq, err)
			}
			if !bytes.Equal(after, data) || kept != nil {
				t.Fatalf("a failed Append(%d) changed the files: %v", seq, err)
			}
			return
		}
		if lastErr != nil {
			t.Fatalf("Last found corruption, Append(%d) succeeded", seq)
		}
		if seq <= last {
			if !bytes.Equal(after, data) || kept != nil {
				t.Fatalf("the same bytes again at %d changed the files", seq)
			}
			return
		}
		if seq != last+1 {
			t.Fatalf("Append(%d) succeeded after %d", seq, last)
		}
		end := bytes.LastIndexByte(data, '\n') + 1
		if !bytes.Equal(after, append(append(bytes.Clone(data[:end]), ev...), '\n')) {
			t.Fatalf("after Append(%d) the file is not the complete lines, then the event", seq)
		}
		if torn := data[end:]; len(torn) > 0 {
			if _, body, _ := bytes.Cut(kept, []byte("\n")); !bytes.Equal(body, append(bytes.Clone(torn), '\n')) {
				t.Fatalf("the torn file does not hold the %d bytes cut", len(torn))
			}
		} else if kept != nil {
			t.Fatal("a torn file without a torn tail")
		}
		if n, _ := storetest.ReadsWhole(t, c); whole >= 0 && n != whole+1 {
			t.Fatalf("a log of %d events read back whole; after an append, %d", whole, n)
		}
	})
}
