package turn

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
)

// A conversation a driver keeps is narrowed in its store, in one step,
// though the turn holds it under a lease; a tools.json beside it from
// before narrows the store's list first and is then removed, so nothing it
// took away comes back; and a later list narrows within a whole tool.
func TestNarrowingKeptByADriver(t *testing.T) {
	r, db := driverRunner(t)
	ctx := context.Background()
	path, _ := r.Agent.Path(home.ChatTools, "sub")
	dir, _ := r.Agent.Path(home.Chat, "sub")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(path, []byte(`{"tools":["memory","run"]}`+"\n"), 0o600)
	kept := func() []string {
		t.Helper()
		c, err := db.Open("sub")
		if err != nil {
			t.Fatal(err)
		}
		only, err := (&turn{r: r, c: r.caches(), thread: "sub", dir: dir, conv: c}).narrowing(ctx, nil)
		if err != nil || only == nil {
			t.Fatalf("the store's narrowing: %v, %v", only, err)
		}
		return only.Entries
	}
	for i, step := range []struct {
		tools, want []string
	}{
		{[]string{"memory__search", "file"}, []string{"memory__search"}},
		{nil, []string{"memory__search"}},
		{[]string{"memory", "run"}, []string{"memory__search"}},
		{[]string{"file"}, []string{}},
	} {
		if _, err := r.Message(ctx, "sub", Message{ID: strconv.Itoa(i), Text: "go", Tools: step.tools}, nil); err != nil {
			t.Fatal(err)
		}
		if got := kept(); !slices.Equal(got, step.want) {
			t.Fatalf("after a message narrowed to %q: the store keeps %q, want %q", step.tools, got, step.want)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("tools.json beside a driver's conversation: %v", err)
		}
	}
	c, _ := db.Open("sub")
	if b, err := c.(store.Meta).MetaGet(ctx, store.ToolsMeta); err != nil || string(b) != "[]" {
		t.Fatalf("the side datum: %s, %v", b, err)
	}
}
