package ending_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/sqlite"
)

// ender records what a Watch asked it.
type ender struct {
	mu     sync.Mutex
	causes []error
}

func (e *ender) End(cause error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.causes = append(e.causes, cause)
	return true
}

func (e *ender) asked() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.causes...)
}

var errAsked = errors.New("asked to end")

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// A turn's record is read every tick while it runs: one naming an event
// before the turn's message (a turn before it) is left, one past it ends
// the turn once, and is removed; with no turn watched, no tick is set
// past the next.
func TestWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		record := filepath.Join(dir, "end")
		var wr ending.Watcher
		if wr.Armed() {
			t.Fatal("a tick set before any turn")
		}
		e := &ender{}
		w := &ending.Watch{Dir: dir, After: 3, End: e, Cause: errAsked}
		wr.Add(w)
		if err := ending.Ask(dir, 3); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * ending.Every)
		synctest.Wait()
		if got := e.asked(); len(got) != 0 || !exists(record) {
			t.Fatalf("a record of the turn before: asked %v, record kept %v; want not asked, kept", got, exists(record))
		}
		if err := ending.Ask(dir, 4); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ending.Every)
		synctest.Wait()
		if got := e.asked(); len(got) != 1 || got[0] != errAsked {
			t.Fatalf("asked %v, want once with its cause", got)
		}
		if exists(record) {
			t.Error("the record honored is still there")
		}
		if wr.Armed() {
			t.Error("a tick set with no turn watched")
		}
		// Removed before its tick: a turn that ended on its own. The tick
		// set runs once more, and sets none.
		w2 := &ending.Watch{Dir: dir, After: 4, End: e, Cause: errAsked}
		wr.Add(w2)
		wr.Remove(w2)
		time.Sleep(ending.Every)
		synctest.Wait()
		if wr.Armed() {
			t.Error("a tick set a tick after the last turn left")
		}
	})
}

// holder is a conversation as another process's turn holds it: its
// appends, and its letting go.
type holder struct {
	add     func(e event.Event) error
	release func()
}

// kinds are the two ways a conversation is held: its folder's flock (a
// log), and its store's lease (SQLite).
var kinds = []struct {
	name string
	open func(t *testing.T, dir string) store.Conversation
	hold func(t *testing.T, dir string, conv store.Conversation) holder
}{
	{"log", func(t *testing.T, dir string) store.Conversation {
		c, err := eventlog.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}, func(t *testing.T, dir string, conv store.Conversation) holder {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		return holder{func(e event.Event) error {
			return conv.Append(context.Background(), e.Seq, event.Append(nil, &e))
		}, func() { unix.Close(fd) }}
	}},
	{"sqlite", func(t *testing.T, dir string) store.Conversation {
		d, err := sqlite.Open(filepath.Join(filepath.Dir(dir), "events.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		c, err := d.Open(filepath.Base(dir))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}, func(t *testing.T, _ string, conv store.Conversation) holder {
		l := conv.(store.Leaser)
		token, err := l.Lease(context.Background(), "turn@test", store.LeaseTTL)
		if err != nil {
			t.Fatal(err)
		}
		return holder{func(e event.Event) error {
			return l.AppendLeased(context.Background(), e.Seq, event.Append(nil, &e), token)
		}, func() { l.Release(context.Background(), token) }}
	}},
}

func add(t *testing.T, c store.Conversation, e event.Event) {
	t.Helper()
	if err := c.Append(context.Background(), e.Seq, event.Append(nil, &e)); err != nil {
		t.Fatal(err)
	}
}

// Asked of a turn another process holds mid-way, Elsewhere writes the
// record naming the turn's last event, waits while the turn holds the
// conversation, and returns the answer it ended with, the record removed.
func TestElsewhere(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for _, c := range []struct {
				name   string
				last   event.Event // the event the turn wrote when it was asked
				honors bool        // the turn reads the record and ends
				answer event.Event // what it wrote before it let go
				want   error
			}{
				{"ended mid-way", event.Event{Seq: 2, Type: event.TypeMessage, Text: "go"}, true,
					event.Event{Seq: 3, Type: event.TypeAnswer, Text: "ended", Extra: []byte(`"ended":true`)}, nil},
				{"calls running", event.Event{Seq: 2, Type: event.TypeAnswer, Calls: []event.Call{{ID: "c", Name: "t__x", Args: []byte("{}")}}}, true,
					event.Event{Seq: 3, Type: event.TypeResult, CallID: "c", Name: "t__x", Error: "ended"}, ending.ErrUnfinished},
				{"answered first", event.Event{Seq: 2, Type: event.TypeMessage, Text: "go"}, false,
					event.Event{Seq: 3, Type: event.TypeAnswer, Text: "done"}, nil},
				{"answered before asked", event.Event{Seq: 2, Type: event.TypeAnswer, Text: "done"}, false,
					event.Event{Seq: 3, Type: event.TypeSummary, Through: 2, Text: "sum"}, nil},
			} {
				t.Run(c.name, func(t *testing.T) {
					elsewhere(t, k.open, k.hold, c.last, c.honors, c.answer, c.want)
				})
			}
		})
	}
}

func elsewhere(t *testing.T, open func(*testing.T, string) store.Conversation, hold func(*testing.T, string, store.Conversation) holder,
	last event.Event, honors bool, answer event.Event, want error) {
	dir := filepath.Join(t.TempDir(), "web-1")
	os.Mkdir(dir, 0o700)
	turn, asker := open(t, dir), open(t, dir)
	defer turn.Close()
	defer asker.Close()
	add(t, turn, event.Event{Seq: 1, Type: event.TypeMessage, Thread: "web:1", Text: "hi"})
	add(t, turn, last)
	h := hold(t, dir, turn)
	record := filepath.Join(dir, "end")
	synctest.Test(t, func(t *testing.T) {
		type told struct {
			e   event.Event
			err error
		}
		out := make(chan told, 1)
		go func() {
			e, err := ending.Elsewhere(context.Background(), dir, asker, 0)
			out <- told{e, err}
		}()
		time.Sleep(ending.Every / 2)
		synctest.Wait()
		b, _ := os.ReadFile(record)
		mid := last.Type != event.TypeAnswer || len(last.Calls) > 0
		if mid && string(b) != "2" || !mid && b != nil {
			t.Errorf("record %q with the turn's last event %s", b, last.Type)
		}
		if honors {
			os.Remove(record) // as the turn's Watcher does
		}
		if err := h.add(answer); err != nil {
			t.Errorf("the turn's answer: %v", err)
		}
		h.release()
		time.Sleep(ending.Every)
		synctest.Wait()
		got := <-out
		if !errors.Is(got.err, want) {
			t.Fatalf("err %v, want %v", got.err, want)
		}
		if want == nil {
			wantSeq := answer.Seq
			if answer.Type == event.TypeSummary {
				wantSeq = last.Seq
			}
			if got.e.Seq != wantSeq || got.e.Type != event.TypeAnswer {
				t.Errorf("told seq %d %s, want the answer at %d", got.e.Seq, got.e.Type, wantSeq)
			}
		}
	})
	if exists(record) {
		t.Error("the record is left")
	}
}

// With no process holding the conversation, nothing is written.
func TestElsewhereNotHeld(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "web-1")
			os.Mkdir(dir, 0o700)
			c := k.open(t, dir)
			defer c.Close()
			add(t, c, event.Event{Seq: 1, Type: event.TypeMessage, Thread: "web:1", Text: "hi"})
			if _, err := ending.Elsewhere(context.Background(), dir, c, 0); !errors.Is(err, ending.ErrNotHeld) {
				t.Fatalf("err %v, want ErrNotHeld", err)
			}
			if exists(filepath.Join(dir, "end")) {
				t.Error("a record written")
			}
		})
	}
}
