package turn

import (
	"context"
	"testing"

	"lnk.dev/linkharness/harness/home"
)

// A thread whose name its folder cannot keep as it is (telegram:42) is
// found in its folder without a look at the disk once its conversation is
// kept warm: the path made, nothing more; before, its folder is looked for
// (a stat, and the former rule's folder looked for too).
func TestFolderWarm(t *testing.T) {
	r, _ := newRunner(t, nil)
	ctx := context.Background()
	before := testing.AllocsPerRun(20, func() { r.Folder(ctx, "telegram:42") })
	if _, err := r.Message(ctx, "telegram:42", Message{ID: "1", Text: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	dir, err := r.Folder(ctx, "telegram:42")
	if err != nil || !r.Warm.Holds(r.Agent.Name, "telegram:42", dir) {
		t.Fatalf("folder %s %v, not the one kept warm", dir, err)
	}
	path := testing.AllocsPerRun(20, func() { r.Agent.Path(home.Chat, "telegram:42") })
	if warm := testing.AllocsPerRun(20, func() { r.Folder(ctx, "telegram:42") }); warm != path || before <= warm {
		t.Errorf("%v allocations to find a warm conversation's folder, want %v, the path's own (%v before it was kept)", warm, path, before)
	}
}
