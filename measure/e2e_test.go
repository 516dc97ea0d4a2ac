package measure

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive/drivetest"
)

func TestMain(m *testing.M) { drivetest.Main(m) }

// TestRunLinkHarness measures the real harness, built from this tree: one
// agent, five messages, in a conversation of ten events. It is skipped only
// when the harness does not build, and never when CI=true.
func TestRunLinkHarness(t *testing.T) {
	program := drivetest.Harness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	res, err := Run(ctx, Config{
		Program:  program,
		Agents:   []int{1},
		Lengths:  []int{10},
		Messages: 5,
		Idle:     200 * time.Millisecond,
		Dir:      dir,
		Keep:     true,
		Profile:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 1 || len(res.Cases[0].PerAgent) != 1 {
		t.Fatalf("cases: %+v", res.Cases)
	}
	c := res.Cases[0]
	a := c.PerAgent[0]
	pm := a.PerMessage
	if c.Messages != 5 || c.Errors != 0 {
		t.Errorf("%d messages answered, %d not (%s); want 5, 0", c.Messages, c.Errors, c.FirstError)
	}
	if pm.TurnsCounted != 5 || pm.TurnErrorsCounted != 0 {
		t.Errorf("the harness counted %v turns, %v errors; want 5, 0", pm.TurnsCounted, pm.TurnErrorsCounted)
	}
	if pm.CPU <= 0 || pm.CPU > 1 {
		t.Errorf("CPU per message %v s", pm.CPU)
	}
	if pm.Latency.P50 <= 0 || pm.Added.P99 < pm.Added.P50 || pm.Turn <= 0 || pm.Model <= 0 || pm.Model > pm.Turn {
		t.Errorf("times per message: %+v", pm)
	}
	// Not Allocs: the runtime counts heap objects as a P's cached spans are
	// given back, so five messages' objects may all land outside the span.
	if pm.StoreWritten <= 0 || pm.StoreRead <= 0 || pm.WrittenChars <= 0 || pm.Allocs < 0 || pm.AllocBytes <= 0 {
		t.Errorf("bytes and allocations per message: %+v", pm)
	}
	if a.Idle.RSS < 1e6 || a.Idle.PSS <= 0 || a.Idle.PSS > a.Idle.RSS || a.Idle.Goroutines <= 0 {
		t.Errorf("idle: %+v", a.Idle)
	}
	if c.Model.Requests < 1 || c.Model.RequestBytes <= 0 {
		t.Errorf("model: %+v", c.Model)
	}
	if p := res.Profile; p == nil || p.Profiles != 1 {
		t.Errorf("profile summary: %+v", p)
	}

	// The conversation written ahead is the one the messages went to: its
	// ten events, then a message and an answer for each of six messages.
	logs, _ := filepath.Glob(filepath.Join(dir, "lnk-measure-*", "case1-*", "agents", "agent-1", "chats", Thread, "events.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("conversation logs: %v", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n < 22 {
		t.Errorf("%d events in the conversation, want at least 22", n)
	}
	if !bytes.Contains(b, []byte(`"id":"m5"`)) || !bytes.HasPrefix(b, []byte(`{"seq":1,`)) {
		t.Errorf("conversation lacks the last message or its start:\n%s", b[:min(len(b), 400)])
	}

	var table strings.Builder
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
}
