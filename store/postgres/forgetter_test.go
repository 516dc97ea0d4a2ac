package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// TestForget forgets one conversation of two: its events and side data go,
// durably, the other's stay, and its lease's tokens keep growing.
func TestForgetConversation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := open(t, dir)
	conv := func(thread string) store.Conversation {
		c, err := d.Open(thread)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tokens := map[string]int64{}
	for _, th := range []string{"a", "b"} {
		c := conv(th)
		var err error
		for seq := int64(1); seq <= 20; seq++ {
			if err := c.Append(ctx, seq, storetest.Event(th, seq, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.(store.Meta).MetaPut(ctx, "x", []byte(th)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.(store.Narrower).NarrowTools(ctx, []string{"read"}); err != nil {
			t.Fatal(err)
		}
		if tokens[th], err = c.(store.Leaser).Lease(ctx, "h", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	a := conv("a")
	if err := a.(store.Leaser).Release(ctx, tokens["a"]); err != nil {
		t.Fatal(err)
	}
	for range 2 { // forgetting again is success
		if err := a.(store.Forgetter).Forget(ctx); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	d = open(t, dir)
	defer d.Close()
	a, b := conv("a"), conv("b")
	if n, err := a.Last(ctx); err != nil || n != 0 {
		t.Fatalf("forgotten: last %d, %v", n, err)
	}
	if err := a.Read(ctx, 1, false, func(int64, []byte) bool { t.Error("forgotten: an event read"); return false }); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x", store.ToolsMeta} {
		if _, err := a.(store.Meta).MetaGet(ctx, name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("forgotten: side datum %q: %v", name, err)
		}
	}
	if n, err := b.Last(ctx); err != nil || n != 20 {
		t.Fatalf("the other: last %d, %v", n, err)
	}
	if v, err := b.(store.Meta).MetaGet(ctx, "x"); err != nil || string(v) != "b" {
		t.Fatalf("the other's side datum: %q, %v", v, err)
	}
	if th, err := d.Threads(ctx); err != nil || !slices.Equal(th, []string{"b"}) {
		t.Fatalf("threads %v, %v", th, err)
	}
	// The lease is kept: the next holder's token is past the last, and
	// the conversation starts again from seq 1, with any bytes.
	got, err := a.(store.Leaser).Lease(ctx, "h2", time.Minute)
	if err != nil || got <= tokens["a"] {
		t.Fatalf("lease after forget: token %d (had %d), %v", got, tokens["a"], err)
	}
	if err := a.(store.Leaser).AppendLeased(ctx, 1, storetest.Event("a", 1, 1), got); err != nil {
		t.Fatal(err)
	}
}
