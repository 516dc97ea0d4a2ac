package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/drive/drivetest"
	"lnk.dev/linkharness/store/storetest"
)

// TestSoak soaks the real harness, built from this tree, for a few
// seconds: turns, tool calls, kills, drops and retries, no violation.
func TestSoak(t *testing.T) {
	program := drivetest.Harness(t)
	seed := storetest.Seed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress strings.Builder
	res, err := Soak(ctx, SoakConfig{Program: program, Duration: 4 * time.Second, Seed: seed, Dir: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("%+v", *res)
	if res.Turns == 0 || res.Kills == 0 || res.Checks != res.Kills+1 || res.Seed != seed || len(res.Violations) != 0 {
		t.Errorf("soak: %+v, want turns, kills, a check after each kill and one at the end, no violation", *res)
	}
}

// TestSoakCheck gives check a log that breaks each invariant, and one that
// keeps them.
func TestSoakCheck(t *testing.T) {
	home := t.TempDir()
	write := func(thread, log string) {
		dir := filepath.Join(home, "chats", thread)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	good := `{"seq":1,"type":"message","id":"a","text":"hi"}` + "\n" + `{"seq":2,"type":"answer","text":"hello"}` + "\n" + `{"seq":3,"type":"mes`
	s := &soak{cfg: SoakConfig{Callers: 1}, agent: drive.Agent{Home: home}, res: &SoakResult{}, acked: map[string]ack{
		"a": {thread: "soak-1", seq: 2, text: "hello"},
	}}
	write("soak-1", good)
	if err := s.check(); err != nil || len(s.res.Violations) != 0 {
		t.Fatalf("a whole log, its torn tail cut: %v, %q", err, s.res.Violations)
	}
	// One call of a tool for each of two messages, a call the turn before
	// left unanswered answered once by the retry: no tool called twice.
	s.acked = map[string]ack{"a": {thread: "soak-1", seq: 4, text: "hello"}, "b": {thread: "soak-1", seq: 8, text: "again"}}
	write("soak-1", `{"seq":1,"type":"message","id":"a","text":"hi"}`+"\n"+
		`{"seq":2,"type":"answer","calls":[{"id":"c1","name":"memory__search","args":{}}]}`+"\n"+
		`{"seq":3,"type":"result","call_id":"c1","name":"memory__search","text":"found"}`+"\n"+
		`{"seq":4,"type":"answer","text":"hello"}`+"\n"+
		`{"seq":5,"type":"message","id":"b","text":"hi"}`+"\n"+
		`{"seq":6,"type":"answer","calls":[{"id":"c1","name":"memory__search","args":{}}]}`+"\n"+
		`{"seq":7,"type":"result","call_id":"c1","name":"memory__search","text":"found"}`+"\n"+
		`{"seq":8,"type":"answer","text":"again"}`+"\n")
	if err := s.check(); err != nil || len(s.res.Violations) != 0 {
		t.Fatalf("one call for each message: %v, %q", err, s.res.Violations)
	}
	s.acked = map[string]ack{"a": {thread: "soak-1", seq: 2, text: "hello"}}
	for name, log := range map[string]string{
		"the answer changed": strings.Replace(good, "hello", "hellO", 1),
		"a seq skipped":      strings.Replace(good, `"seq":2`, `"seq":3`, 1),
		"an id twice":        `{"seq":1,"type":"message","id":"a"}` + "\n" + `{"seq":2,"type":"answer","text":"hello"}` + "\n" + `{"seq":3,"type":"message","id":"a"}` + "\n",
		"the answer missing": `{"seq":1,"type":"message","id":"a"}` + "\n",
	} {
		s.res.Violations = nil
		write("soak-1", log)
		if err := s.check(); err != nil || len(s.res.Violations) == 0 {
			t.Errorf("%s: %v, no violation found", name, err)
		}
	}
	// A tool called twice for one message, its answer as acknowledged.
	for name, log := range map[string]string{
		"a tool called twice": `{"seq":1,"type":"message","id":"a","text":"hi"}` + "\n" +
			`{"seq":2,"type":"answer","calls":[{"id":"c1","name":"memory__search","args":{}}]}` + "\n" +
			`{"seq":3,"type":"result","call_id":"c1","name":"memory__search","text":"found"}` + "\n" +
			`{"seq":4,"type":"answer","calls":[{"id":"c2","name":"memory__search","args":{}}]}` + "\n" +
			`{"seq":5,"type":"result","call_id":"c2","name":"memory__search","text":"found"}` + "\n" +
			`{"seq":6,"type":"answer","text":"hello"}` + "\n",
		"a call answered twice": `{"seq":1,"type":"message","id":"a","text":"hi"}` + "\n" +
			`{"seq":2,"type":"answer","calls":[{"id":"c1","name":"memory__search","args":{}}]}` + "\n" +
			`{"seq":3,"type":"result","call_id":"c1","name":"memory__search","text":"found"}` + "\n" +
			`{"seq":4,"type":"result","call_id":"c1","name":"memory__search","text":"found"}` + "\n" +
			`{"seq":5,"type":"answer","text":"hello"}` + "\n",
	} {
		s.res.Violations = nil
		s.acked = map[string]ack{"a": {thread: "soak-1", seq: int64(strings.Count(log, "\n")), text: "hello"}}
		write("soak-1", log)
		if err := s.check(); err != nil || len(s.res.Violations) != 1 || !strings.Contains(s.res.Violations[0], "twice") {
			t.Errorf("%s: %v, violations %q, want one saying twice", name, err, s.res.Violations)
		}
	}
	s.acked = map[string]ack{"a": {thread: "soak-1", seq: 2, text: "hello"}}
	s.res.Violations = nil
	s.acknowledge("a", "soak-1", drive.Reply{Seq: 4, Text: "other"}, false)
	if len(s.res.Violations) != 1 {
		t.Errorf("an id acknowledged with two answers: violations %q", s.res.Violations)
	}
}
