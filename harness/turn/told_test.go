package turn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/store"
)

// The highest seq told only grows, and reads back as written.
func TestMarkTold(t *testing.T) {
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: t.TempDir()}}
	dir, _ := r.Agent.Path(home.Chat, "web:1")
	pend, _ := r.Agent.Path(home.ChatPending, "web:1")
	if n, err := idempotency.ReadTold(dir, pend); err != nil || n != 0 {
		t.Fatalf("before any: %d %v", n, err)
	}
	for _, seq := range []int64{2, 6, 4} {
		if err := r.MarkTold("web:1", seq); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := idempotency.ReadTold(dir, pend); err != nil || n != 6 {
		t.Errorf("told %d %v, want 6", n, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".told.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	for body, want := range map[string]int64{
		"00000000000000000029 00000000000000000019\n": 19, // a write half done: the lesser
		"7\n": 7, // as files were written before
		"":    0, // made, not yet written
	} {
		os.WriteFile(filepath.Join(dir, "told"), []byte(body), 0o600)
		if n, err := idempotency.ReadTold(dir, pend); err != nil || n != want {
			t.Errorf("told file %q: %d %v, want %d", body, n, err, want)
		}
	}
	os.WriteFile(filepath.Join(dir, "told"), []byte("7\n"), 0o600)
	if err := r.MarkTold("web:1", 9); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "told")); string(b) != "00000000000000000009 00000000000000000009\n" {
		t.Errorf("told file %q after marking 9 over 7", b)
	}
	for _, bad := range []string{"x\n", "1234567890123456789012345678901234\n"} {
		os.WriteFile(filepath.Join(dir, "told"), []byte(bad), 0o600)
		if _, err := idempotency.ReadTold(dir, pend); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("told file %.20q read: %v, want ErrCorrupt", bad, err)
		}
	}
}

// A told file kept in the pending folder, as conversations had it before,
// is read while the conversation's folder has none, and the next told is
// written in the conversation's folder.
func TestToldKeptBefore(t *testing.T) {
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: t.TempDir()}}
	dir, _ := r.Agent.Path(home.Chat, "web:1")
	pend, _ := r.Agent.Path(home.ChatPending, "web:1")
	os.MkdirAll(pend, 0o700)
	os.WriteFile(filepath.Join(pend, "told"), []byte("00000000000000000005 00000000000000000005\n"), 0o600)
	if n, err := idempotency.ReadTold(dir, pend); err != nil || n != 5 {
		t.Fatalf("told kept in the pending folder: %d %v, want 5", n, err)
	}
	if err := r.MarkTold("web:1", 7); err != nil {
		t.Fatal(err)
	}
	if n, err := idempotency.ReadTold(dir, pend); err != nil || n != 7 {
		t.Errorf("after marking 7: %d %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "told")); err != nil {
		t.Errorf("the next told not in the conversation's folder: %v", err)
	}
}

// What marking an answer told costs, once per answer told.
func BenchmarkMarkTold(b *testing.B) {
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: b.TempDir()}}
	b.ReportAllocs()
	seq := int64(0)
	for b.Loop() {
		seq += 2
		if err := r.MarkTold("web:1", seq); err != nil {
			b.Fatal(err)
		}
	}
}

// A warm conversation's last answer is handed to Untold only when nobody
// was told it: not when it was marked through the told file the
// conversation keeps, which then remembers it, nor when it was marked by
// path (a marking while a turn held the conversation), which the kept
// file does not remember, so the file is read again.
func TestWarmUntold(t *testing.T) {
	r, _ := newRunner(t, nil)
	var handed []int64
	r.Untold = func(_ string, a Answer) { handed = append(handed, a.Seq) }
	ctx := context.Background()
	send := func(id string) Answer {
		t.Helper()
		a, err := r.Message(ctx, "t", Message{ID: id, Text: "words " + id}, nil)
		if err != nil || a.Seq == 0 {
			t.Fatalf("message %s: %+v, %v", id, a, err)
		}
		return a
	}
	chat, _ := r.Agent.Path(home.Chat, "t")
	a := send("1")
	if err := r.MarkTold("t", a.Seq); err != nil { // through the file kept
		t.Fatal(err)
	}
	a = send("2")
	if err := idempotency.WriteTold(chat, a.Seq); err != nil { // by path
		t.Fatal(err)
	}
	r.telling.Done(chat, a.Seq)
	untold := send("3")
	r.telling.Done(chat, untold.Seq) // its marking failed
	send("4")
	if len(handed) != 1 || handed[0] != untold.Seq {
		t.Errorf("handed to Untold: %v; want only %d, the answer nobody was told", handed, untold.Seq)
	}
}
