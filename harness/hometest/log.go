package hometest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// WriteLog writes a conversation of n events into dir, made if need be, as
// the log's file: the event of each seq from 1 to n at seq seconds after
// at, the first naming thread, each then filled by fill (its type, text
// and the rest), so a test starts from a long conversation without
// taking its turns.
func WriteLog(tb testing.TB, dir, thread string, at time.Time, n int, fill func(e *event.Event)) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, eventlog.FileName))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var buf []byte
	for seq := int64(1); seq <= int64(n); seq++ {
		e := event.Event{Seq: seq, Time: at.Add(time.Duration(seq) * time.Second)}
		if seq == 1 {
			e.Thread = thread
		}
		fill(&e)
		buf = append(event.Append(buf[:0], &e), '\n')
		if _, err := f.Write(buf); err != nil {
			tb.Fatal(err)
		}
	}
}
