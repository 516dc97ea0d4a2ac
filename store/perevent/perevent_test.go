package perevent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for seq := 1; seq <= 5; seq++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", seq)), fmt.Appendf(nil, "{\"seq\":%d,\"type\":\"message\"}\n", seq), 0o600)
	}
	if !Is(dir) {
		t.Fatal("not seen as the older form")
	}
	c, _ := Open(dir)
	var got []int64
	if err := c.Read(context.Background(), store.FromLast, store.Backward, func(seq int64, ev []byte) bool { got = append(got, seq); return true }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[5 4 3 2 1]" {
		t.Fatalf("read %v", got)
	}
	if err := c.Append(context.Background(), 6, []byte(`{"seq":6}`)); !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("append: %v", err)
	}
	os.Remove(filepath.Join(dir, "3.json"))
	if err := c.Read(context.Background(), 1, store.Forward, func(int64, []byte) bool { return true }); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a missing seq: %v", err)
	}
}
