package turn

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
)

// The highest seq told only grows, and reads back as written.
func TestMarkTold(t *testing.T) {
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: t.TempDir()}}
	pend, _ := r.Agent.Path(home.ChatPending, "web:1")
	if n, err := readTold(pend); err != nil || n != 0 {
		t.Fatalf("before any: %d %v", n, err)
	}
	for _, seq := range []int64{2, 6, 4} {
		if err := r.MarkTold("web:1", seq); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := readTold(pend); err != nil || n != 6 {
		t.Errorf("told %d %v, want 6", n, err)
	}
	if left, _ := filepath.Glob(filepath.Join(pend, ".told.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	for body, want := range map[string]int64{
		"00000000000000000029 00000000000000000019\n": 19, // a write half done: the lesser
		"7\n": 7, // as files were written before
		"":    0, // made, not yet written
	} {
		os.WriteFile(filepath.Join(pend, "told"), []byte(body), 0o600)
		if n, err := readTold(pend); err != nil || n != want {
			t.Errorf("told file %q: %d %v, want %d", body, n, err, want)
		}
	}
	os.WriteFile(filepath.Join(pend, "told"), []byte("7\n"), 0o600)
	if err := r.MarkTold("web:1", 9); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(pend, "told")); string(b) != "00000000000000000009 00000000000000000009\n" {
		t.Errorf("told file %q after marking 9 over 7", b)
	}
	for _, bad := range []string{"x\n", "1234567890123456789012345678901234\n"} {
		os.WriteFile(filepath.Join(pend, "told"), []byte(bad), 0o600)
		if _, err := readTold(pend); !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("told file %.20q read: %v, want ErrCorrupt", bad, err)
		}
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
