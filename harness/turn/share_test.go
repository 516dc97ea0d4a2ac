package turn

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// Two Runners on one home stand for two processes: neither sees the other's
// turn, and only the folder's flock keeps one's message from landing
// between the other's message and answer. Four callers alternate between
// them on one thread: every message is answered, once, after it.
func TestTwoRunnersTakeTurns(t *testing.T) {
	r1, _ := newRunner(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "ok", LatencyMS: 5}}})
	r2 := &Runner{Agent: r1.Agent, Getenv: r1.Getenv, HTTP: r1.HTTP, Metrics: r1.Metrics, Open: r1.Open}
	runners := []*Runner{r1, r2}
	const callers, each = 4, 10
	answers := hometest.Share(t, callers, each, func(by int, id string) (int64, error) {
		a, err := runners[by].Message(context.Background(), "shared", Message{ID: id, Text: id}, nil)
		return a.Seq, err
	})
	hometest.CheckShared(t, readEvents(t, r1, "shared"), answers, callers*each)
}

// A copy for people that cannot be written after the answer is durable
// does not fail the turn: the answer is told, the failure logged, and the
// next turn that can write the copy makes it whole.
func TestCopyFailureKeepsTheAnswer(t *testing.T) {
	r, _ := newRunner(t, nil)
	var logged bytes.Buffer
	r.Log = slog.New(slog.NewJSONHandler(&logged, nil))
	dir, _ := r.Agent.Path(home.Chat, "c")
	copyPath := filepath.Join(dir, "chat.md")
	// A folder where the copy goes: no write can make it a file.
	if err := os.MkdirAll(filepath.Join(copyPath, "in-the-way"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := r.Message(ctx, "c", Message{ID: "m1", Text: "hello"}, nil)
	if err != nil {
		t.Fatalf("the turn failed over its copy: %v", err)
	}
	ev := readEvents(t, r, "c")
	if a.Seq != 2 || len(ev) != 2 || ev[1].Type != event.TypeAnswer || ev[1].Text != a.Text {
		t.Fatalf("told %+v; the log holds %+v", a, ev)
	}
	if !strings.Contains(logged.String(), "the copy for people not written") || !strings.Contains(logged.String(), `"level":"ERROR"`) {
		t.Errorf("the copy's failure was not logged: %s", logged.String())
	}
	// Out of the way, the next turn makes the copy whole.
	os.RemoveAll(copyPath)
	if _, err := r.Message(ctx, "c", Message{ID: "m2", Text: "again"}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(copyPath)
	if err != nil || !strings.Contains(string(b), "hello") || !strings.Contains(string(b), "again") {
		t.Errorf("the copy after: %q, %v", b, err)
	}
}
