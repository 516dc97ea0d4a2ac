// Package storetest is the conformance suite every way of keeping a
// conversation runs: the log, compact, and each driver, in-process and
// through its plugin program or the store bridge. A store's test calls Run
// with a function that opens the store kept in a folder; a store kept in one
// file or folder there calls RunFile with its name and its Open:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunFile(t, "events.sqlite", sqlite.Open)
//	}
//
// A store kept one folder per conversation (the log, compact) is made a
// Driver with Folders. The abilities (store.Lister, store.Meta,
// store.Narrower, store.Leaser) are tested where the store has them, found by
// type assertion; a store that answers store.ErrUnsupported skips them.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/rules"
)

// Open opens the store kept in dir, a folder the suite made for it. Opening
// the same dir again opens the same store again, which is how reopening is
// tested; a new dir is a new, empty store. The suite closes what it opens.
type Open func(t *testing.T, dir string) store.Driver

// Run runs the suite against the stores open makes, each test in a store of
// its own.
func Run(t *testing.T, open Open) { run(t, open, "") }

// RunFile is Run for a store kept in one file or folder, name, of the
// folder the suite makes (sqlite's events.sqlite, pebble's events.pebble):
// open opens it by its path.
func RunFile[D store.Driver](t *testing.T, name string, open func(path string) (D, error)) {
	Run(t, func(t *testing.T, dir string) store.Driver {
		d, err := open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

// RunHome is Run for stores given an agent's home, which keep its
// conversations under the home's chats folder, as a plugin program does
// (lnk-sqlite keeps chats/events.sqlite).
func RunHome(t *testing.T, open Open) { run(t, open, "chats") }

func run(t *testing.T, open Open, chats string) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Empty", testEmpty},
		{"AppendOrder", testAppendOrder},
		{"SameBytesAgain", testSameBytesAgain},
		{"SeqTaken", testSeqTaken},
		{"Gap", testGap},
		{"BadEvent", testBadEvent},
		{"BadName", testBadName},
		{"ReadForward", reads("fwd", 300,
			aRead{from: 1, want: Span(1, 300)},
			aRead{from: 250, want: Span(250, 300)},
			aRead{from: 300, want: []int64{300}},
			aRead{from: 301},
			aRead{from: 0, want: []int64{300}}, // from 0 is the last event
		)},
		{"ReadBackward", reads("back", 300,
			aRead{from: 0, reverse: true, want: Span(300, 1)},
			aRead{from: 40, reverse: true, want: Span(40, 1)},
			aRead{from: 1, reverse: true, want: []int64{1}},
			aRead{from: 1000, reverse: true, want: Span(300, 1)}, // past the end is the last
		)},
		{"ReadStopsEarly", reads("stop", 100,
			aRead{from: 0, reverse: true, most: 32, want: Span(100, 69)},
			aRead{from: 10, most: 5, want: Span(10, 14)},
			aRead{from: 50, reverse: true, most: 1, want: []int64{50}},
		)},
		{"Reopen", testReopen},
		{"ThreadsApart", testThreadsApart},
		{"RacingWriters", testRacingWriters},
		{"Threads", testThreads},
		{"Meta", testMeta},
		{"NarrowTools", testNarrowTools},
		{"Lease", testLease},
		{"LeaseFencing", testLeaseFencing},
		{"LeaseRunsOut", testLeaseRunsOut},
		{"HoldLease", testHoldLease},
		{"Forget", testForget},
		{"OwnNames", testOwnNames},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &suite{t: t, open: open, dir: t.TempDir(), chats: chats}
			tt.fn(t, s)
		})
	}
}

// suite is one test's store.
type suite struct {
	t     *testing.T
	open  Open
	dir   string
	chats string // where under dir the store keeps conversations: "" or "chats"
	d     store.Driver
	gen   int // counts opens
}

// driver returns the store, opening it when it is not open.
func (s *suite) driver() store.Driver {
	s.t.Helper()
	if s.d == nil {
		d := s.open(s.t, s.dir)
		s.d, s.gen = d, s.gen+1
		gen := s.gen
		s.t.Cleanup(func() {
			if s.gen == gen && s.d != nil { // not closed by reopen
				d.Close()
			}
		})
	}
	return s.d
}

// reopen closes the store and opens it again.
func (s *suite) reopen() {
	s.t.Helper()
	if err := s.d.Close(); err != nil {
		s.t.Fatalf("close: %v", err)
	}
	s.d = nil
	s.driver()
}

// conv opens thread's conversation, closed at the test's end.
func (s *suite) conv(thread string) store.Conversation {
	s.t.Helper()
	c, err := s.driver().Open(thread)
	if err != nil {
		s.t.Fatalf("open %q: %v", thread, err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Event returns the event of seq in thread, the same bytes for the same
// arguments and other bytes for another variant. Its text holds bytes a
// re-encoding would change (<, >, &, non-ASCII, escapes), and every ninth
// event is long, so a store that does not keep bytes as given fails.
func Event(thread string, seq int64, variant int) []byte {
	e := event.Event{
		Seq:  seq,
		Time: time.Unix(1767225600+seq, seq).UTC(),
		Type: event.TypeMessage,
		Text: fmt.Sprintf("<%s> & %d.%d é \"quoted\" \\ tab\t", thread, seq, variant),
	}
	if seq == 1 {
		e.Thread = thread
	}
	if seq%9 == 0 {
		e.Text += strings.Repeat("long ", 20000)
	}
	return event.Append(nil, &e)
}

var bg = context.Background()

func fill(t *testing.T, c store.Conversation, thread string, from, to int64) {
	t.Helper()
	for seq := from; seq <= to; seq++ {
		if err := c.Append(bg, seq, Event(thread, seq, 0)); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
}

type seen struct {
	seq   int64
	event []byte
}

func read(t *testing.T, c store.Conversation, from int64, reverse bool, most int) []seen {
	t.Helper()
	var got []seen
	err := c.Read(bg, from, reverse, func(seq int64, event []byte) bool {
		got = append(got, seen{seq, bytes.Clone(event)})
		return most <= 0 || len(got) < most
	})
	if err != nil {
		t.Fatalf("read from %d (reverse %v): %v", from, reverse, err)
	}
	return got
}

// check says whether got is thread's events in seqs, in that order.
func check(t *testing.T, thread string, got []seen, seqs ...int64) {
	t.Helper()
	var gs []int64
	for _, g := range got {
		gs = append(gs, g.seq)
	}
	if !slices.Equal(gs, seqs) {
		t.Fatalf("read seqs %v, want %v", gs, seqs)
	}
	for _, g := range got {
		if want := Event(thread, g.seq, 0); !bytes.Equal(g.event, want) {
			t.Fatalf("seq %d reads %.200q, want %.200q", g.seq, g.event, want)
		}
	}
}

func last(t *testing.T, c store.Conversation) int64 {
	t.Helper()
	n, err := c.Last(bg)
	if err != nil {
		t.Fatalf("last: %v", err)
	}
	return n
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func testEmpty(t *testing.T, s *suite) {
	c := s.conv("empty")
	if n := last(t, c); n != 0 {
		t.Fatalf("last of an empty conversation is %d", n)
	}
	check(t, "empty", read(t, c, 1, false, 0))
	check(t, "empty", read(t, c, 0, true, 0))
}

func testAppendOrder(t *testing.T, s *suite) {
	c := s.conv("order")
	fill(t, c, "order", 1, 20)
	if n := last(t, c); n != 20 {
		t.Fatalf("last is %d, want 20", n)
	}
	check(t, "order", read(t, c, 1, false, 0), Span(1, 20)...)
}

func testSameBytesAgain(t *testing.T, s *suite) {
	c := s.conv("again")
	fill(t, c, "again", 1, 3)
	for _, seq := range []int64{1, 3} {
		if err := c.Append(bg, seq, Event("again", seq, 0)); err != nil {
			t.Fatalf("the same bytes again at %d: %v", seq, err)
		}
	}
	if n := last(t, c); n != 3 {
		t.Fatalf("last is %d after writing the same bytes again, want 3", n)
	}
	check(t, "again", read(t, c, 1, false, 0), 1, 2, 3)
}

func testSeqTaken(t *testing.T, s *suite) {
	c := s.conv("taken")
	fill(t, c, "taken", 1, 3)
	for _, seq := range []int64{1, 2, 3} {
		wantErr(t, fmt.Sprintf("other bytes at %d", seq), c.Append(bg, seq, Event("taken", seq, 1)), store.ErrSeqTaken)
	}
	check(t, "taken", read(t, c, 1, false, 0), 1, 2, 3)
}

func testGap(t *testing.T, s *suite) {
	c := s.conv("gap")
	wantErr(t, "seq 2 first", c.Append(bg, 2, Event("gap", 2, 0)), store.ErrGap)
	fill(t, c, "gap", 1, 2)
	wantErr(t, "seq 4 after 2", c.Append(bg, 4, Event("gap", 4, 0)), store.ErrGap)
	if n := last(t, c); n != 2 {
		t.Fatalf("last is %d, want 2", n)
	}
}

func testBadEvent(t *testing.T, s *suite) {
	c := s.conv("bad")
	wantErr(t, "the event of seq 2 as seq 1", c.Append(bg, 1, Event("bad", 2, 0)), store.ErrBadEvent)
	wantErr(t, "not JSON", c.Append(bg, 1, []byte(`{"seq":1,`)), store.ErrBadEvent)
	big := event.Append(nil, &event.Event{Seq: 1, Type: event.TypeMessage, Text: strings.Repeat("x", event.MaxBytes)})
	wantErr(t, "over event.MaxBytes", c.Append(bg, 1, big), store.ErrBadEvent)
	wantErr(t, "over event.MaxBytes", c.Append(bg, 1, big), store.ErrTooLarge)
	if n := last(t, c); n != 0 {
		t.Fatalf("last is %d after refused appends, want 0", n)
	}
}

// A thread key no store keeps is refused with ErrBadName.
func testBadName(t *testing.T, s *suite) {
	for _, thread := range []string{"", "a\x00b", "a\nb", strings.Repeat("x", 201)} {
		c, err := s.driver().Open(thread)
		if err == nil {
			c.Close()
		}
		wantErr(t, fmt.Sprintf("thread key %q", thread), err, store.ErrBadName)
	}
}

// aRead is one read of a conversation (read's from, reverse and most) and
// the seqs it hands out.
type aRead struct {
	from    int64
	reverse bool
	most    int
	want    []int64
}

// reads is a test that fills thread with seqs 1 to n and checks each read
// of rs.
func reads(thread string, n int64, rs ...aRead) func(t *testing.T, s *suite) {
	return func(t *testing.T, s *suite) {
		c := s.conv(thread)
		fill(t, c, thread, 1, n)
		for _, r := range rs {
			check(t, thread, read(t, c, r.from, r.reverse, r.most), r.want...)
		}
	}
}

func testReopen(t *testing.T, s *suite) {
	c := s.conv("reopen")
	fill(t, c, "reopen", 1, 10)
	c.Close()
	s.reopen()
	c = s.conv("reopen")
	if n := last(t, c); n != 10 {
		t.Fatalf("last after reopening is %d, want 10", n)
	}
	check(t, "reopen", read(t, c, 1, false, 0), Span(1, 10)...)
	fill(t, c, "reopen", 11, 12)
	check(t, "reopen", read(t, c, 0, true, 3), 12, 11, 10)
}

func testThreadsApart(t *testing.T, s *suite) {
	a, b := s.conv("telegram-42"), s.conv("telegram-42.x")
	fill(t, a, "telegram-42", 1, 5)
	fill(t, b, "telegram-42.x", 1, 2)
	check(t, "telegram-42", read(t, a, 1, false, 0), Span(1, 5)...)
	check(t, "telegram-42.x", read(t, b, 0, true, 0), 2, 1)
	if n := last(t, s.conv("telegram-4")); n != 0 {
		t.Fatalf("a thread never written has last %d", n)
	}
}

// testRacingWriters has writers, each with a conversation of its own on
// one thread, race to append the next event: each seq is written once, by
// the writer whose bytes it holds.
func testRacingWriters(t *testing.T, s *suite) {
	const writers, n = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		c := s.conv("race")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seq, err := c.Last(bg)
				if err != nil || seq >= n {
					errs <- err
					return
				}
				seq++
				err = c.Append(bg, seq, Event("race", seq, w))
				if err != nil && !errors.Is(err, store.ErrSeqTaken) && !errors.Is(err, store.ErrGap) {
					errs <- fmt.Errorf("writer %d, seq %d: %w", w, seq, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := read(t, s.conv("race"), 1, false, 0)
	if len(got) != n {
		t.Fatalf("%d events after the race, want %d", len(got), n)
	}
	for i, g := range got {
		seq := int64(i + 1)
		ok := g.seq == seq && slices.ContainsFunc([]int{0, 1, 2, 3}, func(w int) bool { return bytes.Equal(g.event, Event("race", seq, w)) })
		if !ok {
			t.Fatalf("event %d is seq %d, %.100q: not one writer's", i, g.seq, g.event)
		}
	}
}

func testThreads(t *testing.T, s *suite) {
	l, ok := s.driver().(store.Lister)
	if !ok {
		t.Skip("not a store.Lister")
	}
	got, err := l.Threads(bg)
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil || len(got) != 0 {
		t.Fatalf("threads of an empty store: %q, %v", got, err)
	}
	for _, th := range []string{"b", "a", "telegram-42"} {
		fill(t, s.conv(th), th, 1, 2)
	}
	s.conv("never-written")
	got, err = l.Threads(bg)
	if want := []string{"a", "b", "telegram-42"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("threads: %q, %v; want %q", got, err, want)
	}
}

// ability returns the conversation as T, or skips the test.
func ability[T any](t *testing.T, c store.Conversation) T {
	t.Helper()
	a, ok := c.(T)
	if !ok {
		t.Skipf("not a %T", (*T)(nil))
	}
	return a
}

func skipUnsupported(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, store.ErrUnsupported) {
		t.Skip(err)
	}
}

func testMeta(t *testing.T, s *suite) {
	m := ability[store.Meta](t, s.conv("meta"))
	_, err := m.MetaGet(bg, "pending.7")
	skipUnsupported(t, err)
	wantErr(t, "get of a name never put", err, store.ErrNotFound)
	data := []byte(`{"text":"an answer <kept> & \u00e9"}` + "\x00\xff")
	if err := m.MetaPut(bg, "pending.7", data); err != nil {
		t.Fatal(err)
	}
	if err := m.MetaPut(bg, "end", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := m.MetaGet(bg, "pending.7"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %q, %v; want %q", got, err, data)
	}
	if got, err := m.MetaGet(bg, "end"); err != nil || len(got) != 0 {
		t.Fatalf("get of an empty value: %q, %v", got, err)
	}
	if err := m.MetaPut(bg, "pending.7", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got, err := m.MetaGet(bg, "pending.7"); err != nil || string(got) != "2" {
		t.Fatalf("get after a second put: %q, %v", got, err)
	}
	other := ability[store.Meta](t, s.conv("meta2"))
	_, err = other.MetaGet(bg, "pending.7")
	wantErr(t, "another thread's datum", err, store.ErrNotFound)
	for range 2 {
		if err := m.MetaDelete(bg, "pending.7"); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	_, err = m.MetaGet(bg, "pending.7")
	wantErr(t, "get after delete", err, store.ErrNotFound)
	wantErr(t, "a name holding a slash", m.MetaPut(bg, "../x", nil), store.ErrBadName)
	_, err = m.MetaGet(bg, "")
	wantErr(t, "an empty name", err, store.ErrBadName)
	wantErr(t, "a value over MaxMetaBytes", m.MetaPut(bg, "big", make([]byte, store.MaxMetaBytes+1)), store.ErrTooLarge)
	s.reopen()
	m = ability[store.Meta](t, s.conv("meta"))
	if _, err := m.MetaGet(bg, "end"); err != nil {
		t.Fatalf("get after reopening: %v", err)
	}
}

func testNarrowTools(t *testing.T, s *suite) {
	c := s.conv("narrow")
	n := ability[store.Narrower](t, c)
	steps := []struct{ narrow, want []string }{
		{[]string{"run", "memory_search", "file_read", "run"}, []string{"file_read", "memory_search", "run"}},
		{[]string{"run", "web", "file_read"}, []string{"file_read", "run"}}, // web was never there
		{[]string{"run", "file_read", "memory_search"}, []string{"file_read", "run"}},
		{[]string{"web"}, []string{}},
		{[]string{"run"}, []string{}},
	}
	for i, st := range steps {
		got, err := n.NarrowTools(bg, st.narrow)
		skipUnsupported(t, err)
		if err != nil || !slices.Equal(got, st.want) {
			t.Fatalf("step %d: narrowing to %q: %q, %v; want %q", i, st.narrow, got, err, st.want)
		}
	}
	if m, ok := c.(store.Meta); ok {
		if b, err := m.MetaGet(bg, store.ToolsMeta); err != nil || string(b) != "[]" {
			t.Fatalf("the side datum %q: %q, %v", store.ToolsMeta, b, err)
		}
	}
	// A whole tool allows each of its calls (tool__call), whichever list
	// names it, so a later list of calls narrows within it: narrowed to
	// memory, then to memory__search, a conversation may call
	// memory__search, never nothing.
	n = ability[store.Narrower](t, s.conv("narrow-calls"))
	steps = []struct{ narrow, want []string }{
		{[]string{"memory", "file__read"}, []string{"file__read", "memory"}},
		{[]string{"memory__search", "memory__read", "file", "run"}, []string{"file__read", "memory__read", "memory__search"}},
		{[]string{"memory"}, []string{"memory__read", "memory__search"}},
		{[]string{"memory__search", "memoryx__read"}, []string{"memory__search"}},
		{[]string{"memory__read"}, []string{}},
	}
	for i, st := range steps {
		got, err := n.NarrowTools(bg, st.narrow)
		if err != nil || !slices.Equal(got, st.want) {
			t.Fatalf("calls, step %d: narrowing to %q: %q, %v; want %q", i, st.narrow, got, err, st.want)
		}
	}
}

func leaser(t *testing.T, s *suite, thread string) store.Leaser {
	t.Helper()
	return ability[store.Leaser](t, s.conv(thread))
}

func testLease(t *testing.T, s *suite) {
	a, b := leaser(t, s, "lease"), leaser(t, s, "lease")
	t1, err := a.Lease(bg, "a", time.Minute)
	skipUnsupported(t, err)
	if err != nil || t1 <= 0 {
		t.Fatalf("first lease: token %d, %v", t1, err)
	}
	if t2, err := a.Lease(bg, "a", time.Minute); err != nil || t2 != t1 {
		t.Fatalf("renewal: token %d, %v; want %d", t2, err, t1)
	}
	_, err = b.Lease(bg, "b", time.Minute)
	wantErr(t, "a lease held by another", err, store.ErrLeaseHeld)
	if err := a.Release(bg, t1); err != nil {
		t.Fatalf("release: %v", err)
	}
	wantErr(t, "a second release", a.Release(bg, t1), store.ErrStaleLease)
	t3, err := b.Lease(bg, "b", time.Minute)
	if err != nil || t3 <= t1 {
		t.Fatalf("lease after release: token %d, %v; want over %d", t3, err, t1)
	}
	// Tokens survive reopening, and still only grow.
	b.Release(bg, t3)
	s.reopen()
	t4, err := leaser(t, s, "lease").Lease(bg, "c", time.Minute)
	if err != nil || t4 <= t3 {
		t.Fatalf("lease after reopening: token %d, %v; want over %d", t4, err, t3)
	}
	// Another thread's lease is its own.
	if _, err := leaser(t, s, "lease2").Lease(bg, "d", time.Minute); err != nil {
		t.Fatalf("another thread's lease: %v", err)
	}
}

func testLeaseFencing(t *testing.T, s *suite) {
	a, b := leaser(t, s, "fence"), leaser(t, s, "fence")
	ta, err := a.Lease(bg, "a", time.Minute)
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AppendLeased(bg, 1, Event("fence", 1, 0), ta); err != nil {
		t.Fatalf("append with the lease's token: %v", err)
	}
	wantErr(t, "append without a token while a lease is held",
		b.AppendLeased(bg, 2, Event("fence", 2, 0), 0), store.ErrStaleLease)
	wantErr(t, "plain append while a lease is held",
		s.conv("fence").Append(bg, 2, Event("fence", 2, 0)), store.ErrStaleLease)
	wantErr(t, "append with a token never given",
		b.AppendLeased(bg, 2, Event("fence", 2, 0), ta+1), store.ErrStaleLease)
	a.Release(bg, ta)
	tb, err := b.Lease(bg, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "append with a stale token",
		a.AppendLeased(bg, 2, Event("fence", 2, 9), ta), store.ErrStaleLease)
	if err := b.AppendLeased(bg, 2, Event("fence", 2, 0), tb); err != nil {
		t.Fatalf("append with the new token: %v", err)
	}
	check(t, "fence", read(t, s.conv("fence"), 1, false, 0), 1, 2)
	b.Release(bg, tb)
	fill(t, s.conv("fence"), "fence", 3, 3) // nobody holds it: plain appends pass
}

// testLeaseRunsOut has a holder stop renewing: another takes the lease only
// once it has stayed unrenewed for its time to live, and the first holder's
// appends are refused from then on.
func testLeaseRunsOut(t *testing.T, s *suite) {
	const ttl = 300 * time.Millisecond
	a, b := leaser(t, s, "expire"), leaser(t, s, "expire")
	ta, err := a.Lease(bg, "a", ttl)
	skipUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var (
		tb     int64
		ranOut string
	)
	taker, says := b.(store.LeaseTaker)
	for {
		if says {
			tb, ranOut, err = taker.LeaseFrom(bg, "b", ttl)
		} else {
			tb, err = b.Lease(bg, "b", ttl)
		}
		if err == nil {
			break
		}
		wantErr(t, "lease before it ran out", err, store.ErrLeaseHeld)
		// The store's clock running out the lease is what is under test;
		// the store may be another process (a server, a database), so the
		// time passes for real.
		time.Sleep(ttl / 10)
	}
	if waited := time.Since(start); waited < ttl {
		t.Fatalf("took a lease with time to live %v after %v", ttl, waited)
	}
	if tb <= ta {
		t.Fatalf("token %d after %d", tb, ta)
	}
	if says && ranOut != "a" {
		t.Errorf("the lease taken from a holder whose time ran out says it was %q's, want a's", ranOut)
	}
	wantErr(t, "the old holder's append", a.AppendLeased(bg, 1, Event("expire", 1, 1), ta), store.ErrStaleLease)
	_, err = a.Lease(bg, "a", ttl)
	wantErr(t, "the old holder's renewal", err, store.ErrLeaseHeld)
	if err := b.AppendLeased(bg, 1, Event("expire", 1, 0), tb); err != nil {
		t.Fatal(err)
	}
}

func testHoldLease(t *testing.T, s *suite) {
	c := s.conv("hold")
	if _, ok := c.(store.Leaser); !ok {
		t.Skip("not a store.Leaser")
	}
	// Long enough that a renewal through a plugin program and a slow store
	// (a race-built one, an emulator) is answered well within it.
	const ttl = time.Second
	held, release, err := store.HoldLease(bg, c, "test", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := held.(*store.Leased); !ok {
		t.Skip("HoldLease found no lease") // the store said ErrUnsupported
	}
	// Past several times to live, renewals keep it.
	for seq := int64(1); seq <= 4; seq++ {
		// Time passing, for real (the store may be another process), is
		// what the renewals are under test against.
		time.Sleep(ttl / 2)
		if err := held.Append(bg, seq, Event("hold", seq, 0)); err != nil {
			t.Fatalf("append %d under the lease: %v", seq, err)
		}
	}
	ctx, cancel := context.WithTimeout(bg, 2*ttl)
	_, _, err = store.HoldLease(ctx, s.conv("hold"), "other", ttl)
	cancel()
	wantErr(t, "a second holder while the first renews", err, context.DeadlineExceeded)
	release()
	release()
	other, release2, err := store.HoldLease(bg, s.conv("hold"), "other", ttl)
	if err != nil {
		t.Fatalf("lease after release: %v", err)
	}
	defer release2()
	if from := other.(*store.Leased).TookOver(); from != "" {
		t.Errorf("a lease let go and taken says it ran out for %q", from)
	}
	wantErr(t, "the first holder's append after release", held.Append(bg, 5, Event("hold", 5, 1)), store.ErrStaleLease)
	if err := other.Append(bg, 5, Event("hold", 5, 0)); err != nil {
		t.Fatal(err)
	}
}

// Folders makes a store kept one folder per conversation (the log,
// compact) a store.Driver: thread's conversation is open(root/thread), its
// folder made when it is opened.
func Folders(root string, open func(dir string) (store.Conversation, error)) store.Driver {
	return folders{root: root, open: open}
}

type folders struct {
	root string
	open func(dir string) (store.Conversation, error)
}

func (f folders) Open(thread string) (store.Conversation, error) {
	if err := rules.Thread(thread); err != nil || strings.ContainsAny(thread, `/\`) || thread == "." || thread == ".." {
		return nil, fmt.Errorf("storetest: %w: thread %q is no folder name", store.ErrBadName, thread)
	}
	dir := filepath.Join(f.root, thread)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return f.open(dir)
}

func (folders) Close() error { return nil }
