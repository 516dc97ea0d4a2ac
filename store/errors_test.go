package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/sqlite"
)

// An error of a name, a limit or a conflict, from whichever store, is the
// store's sentinel to errors.Is: a caller maps it to one answer, whoever
// refused. harness/home's are too (its TestErrorsAreStores).
func TestSentinelsAcrossPackages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ev := func(seq int64, text string) []byte {
		return event.Append(nil, &event.Event{Seq: seq, Time: time.Unix(1767225600, 0), Type: event.TypeMessage, Text: text})
	}
	big := ev(2, string(bytes.Repeat([]byte("x"), event.MaxBytes)))

	for _, d := range []string{"log", "compact"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	logConv, err := log.Open(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logConv.Close()
	compactConv, err := compact.Open(filepath.Join(dir, "compact"))
	if err != nil {
		t.Fatal(err)
	}
	defer compactConv.Close()
	drv, err := sqlite.Open(filepath.Join(dir, "events.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer drv.Close()
	sqliteConv, err := drv.Open("t")
	if err != nil {
		t.Fatal(err)
	}
	defer sqliteConv.Close()
	for _, c := range []store.Conversation{logConv, compactConv, sqliteConv} {
		if err := c.Append(ctx, 1, ev(1, "first")); err != nil {
			t.Fatal(err)
		}
	}
	meta := sqliteConv.(store.Meta)
	leaser := sqliteConv.(store.Leaser)
	if _, err := leaser.Lease(ctx, "one", time.Hour); err != nil {
		t.Fatal(err)
	}

	type call struct {
		name string
		err  error
	}
	run := func(name string, f func() error) call { return call{name, f()} }
	for _, tc := range []struct {
		call
		want []error
	}{
		{run("log: append over the limit", func() error { return logConv.Append(ctx, 2, big) }), []error{store.ErrTooLarge, store.ErrBadEvent}},
		{run("compact: append over the limit", func() error { return compactConv.Append(ctx, 2, big) }), []error{store.ErrTooLarge, store.ErrBadEvent}},
		{run("sqlite: append over the limit", func() error { return sqliteConv.Append(ctx, 2, big) }), []error{store.ErrTooLarge, store.ErrBadEvent}},
		{run("sqlite: side datum over the limit", func() error {
			return meta.MetaPut(ctx, "x", make([]byte, store.MaxMetaBytes+1))
		}), []error{store.ErrTooLarge}},

		{run("sqlite: an empty thread key", func() error { _, err := drv.Open(""); return err }), []error{store.ErrBadName}},
		{run("sqlite: a thread key with a control byte", func() error { _, err := drv.Open("a\x01b"); return err }), []error{store.ErrBadName}},
		{run("sqlite: a side datum's name", func() error { return meta.MetaPut(ctx, "a/b", nil) }), []error{store.ErrBadName}},

		{run("log: a seq taken", func() error { return logConv.Append(ctx, 1, ev(1, "other")) }), []error{store.ErrSeqTaken}},
		{run("compact: a seq taken", func() error { return compactConv.Append(ctx, 1, ev(1, "other")) }), []error{store.ErrSeqTaken}},
		{run("sqlite: a seq taken", func() error { return leaser.AppendLeased(ctx, 1, ev(1, "other"), 1) }), []error{store.ErrSeqTaken}},
		{run("sqlite: a lease held", func() error { _, err := leaser.Lease(ctx, "two", time.Hour); return err }), []error{store.ErrLeaseHeld}},
		{run("sqlite: a stale lease", func() error { return sqliteConv.Append(ctx, 2, ev(2, "x")) }), []error{store.ErrStaleLease}},
		{run("log: a gap", func() error { return logConv.Append(ctx, 5, ev(5, "x")) }), []error{store.ErrGap}},

		{run("event: not an object", func() error {
			var d event.Decoder
			var e event.Event
			return d.Decode([]byte(`[1]`), &e)
		}), []error{store.ErrBadEvent, event.ErrInvalid}},
		{run("event: no seq", func() error { _, err := event.SeqOf([]byte(`{"type":"message"}`)); return err }), []error{store.ErrBadEvent}},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, want := range tc.want {
			if !errors.Is(tc.err, want) {
				t.Errorf("%s: %v is not %v", tc.name, tc.err, want)
			}
		}
	}
}
