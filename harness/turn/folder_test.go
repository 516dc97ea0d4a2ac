package turn

import (
	"context"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/durable"
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

// A new conversation beside others waits for the disk twice: once for its
// folder's name and its log's, synced together by the log before its first
// line, and once for its events. The folder's name was its own wait before
// the log's.
func TestNewConversationWaits(t *testing.T) {
	r, _ := newRunner(t, nil)
	ctx := context.Background()
	if _, err := r.Message(ctx, "first", Message{ID: "1", Text: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	before := durable.OS().Stats()
	if _, err := r.Message(ctx, "second", Message{ID: "1", Text: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	if waits := durable.OS().Stats().Commits - before.Commits; waits != 2 {
		t.Errorf("a new conversation's first turn waited for %d commits, want 2: the names, then the events", waits)
	}
}
