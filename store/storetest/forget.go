package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
)

// testForget forgets one conversation of two: its events and side data go,
// durably (the store is reopened), the other's stay, and its lease's
// tokens keep growing, so the conversation can start again from seq 1.
func testForget(t *testing.T, s *suite) {
	if _, ok := s.conv("a").(store.Forgetter); !ok {
		t.Skip("not a store.Forgetter")
	}
	tokens := map[string]int64{}
	for _, th := range []string{"a", "b"} {
		c := s.conv(th)
		fill(t, c, th, 1, 20)
		tokens[th] = useAbilities(t, c, "x", th, "read", "h")
	}
	a := s.conv("a")
	if l, ok := a.(store.Leaser); ok && tokens["a"] != 0 {
		if err := l.Release(bg, tokens["a"]); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // forgetting again is success
		err := a.(store.Forgetter).Forget(bg)
		skipUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
	}
	s.reopen()
	a, b := s.conv("a"), s.conv("b")
	if n := last(t, a); n != 0 {
		t.Fatalf("forgotten: last %d", n)
	}
	if got := read(t, a, 1, false, 0); len(got) != 0 {
		t.Fatalf("forgotten: read %v", got)
	}
	if m, ok := a.(store.Meta); ok {
		for _, name := range []string{"x", store.ToolsMeta} {
			if _, err := m.MetaGet(bg, name); !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrUnsupported) {
				t.Errorf("forgotten: side datum %q: %v", name, err)
			}
		}
	}
	if n := last(t, b); n != 20 {
		t.Fatalf("the other: last %d", n)
	}
	if m, ok := b.(store.Meta); ok {
		if v, err := m.MetaGet(bg, "x"); err != nil && !errors.Is(err, store.ErrUnsupported) || err == nil && string(v) != "b" {
			t.Fatalf("the other's side datum: %q, %v", v, err)
		}
	}
	if l, ok := s.driver().(store.Lister); ok {
		if th, err := l.Threads(bg); err == nil && !slices.Equal(th, []string{"b"}) {
			t.Fatalf("threads %v", th)
		}
	}
	// The lease is kept: the next holder's token is past the last, and the
	// conversation starts again from seq 1, with any bytes.
	if l, ok := a.(store.Leaser); ok && tokens["a"] != 0 {
		got, err := l.Lease(bg, "h2", time.Minute)
		if err != nil || got <= tokens["a"] {
			t.Fatalf("lease after forget: token %d (had %d), %v", got, tokens["a"], err)
		}
		if err := l.AppendLeased(bg, 1, Event("a", 1, 1), got); err != nil {
			t.Fatal(err)
		}
	}
}

// useAbilities uses on c what only some stores can do, each where c has it
// and does not answer store.ErrUnsupported: it puts the side datum name,
// narrows the tool list to tool, and takes a minute's lease for holder,
// whose token it returns (0 with none).
func useAbilities(t *testing.T, c store.Conversation, name, data, tool, holder string) int64 {
	t.Helper()
	if m, ok := c.(store.Meta); ok {
		if err := m.MetaPut(bg, name, []byte(data)); err != nil && !errors.Is(err, store.ErrUnsupported) {
			t.Fatal(err)
		}
	}
	if n, ok := c.(store.Narrower); ok {
		if _, err := n.NarrowTools(bg, []string{tool}); err != nil && !errors.Is(err, store.ErrUnsupported) {
			t.Fatal(err)
		}
	}
	var token int64
	if l, ok := c.(store.Leaser); ok {
		var err error
		token, err = l.Lease(bg, holder, time.Minute)
		if err != nil && !errors.Is(err, store.ErrUnsupported) {
			t.Fatal(err)
		}
	}
	return token
}
