package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/fleet/fleettest"
)

// Agents of a file with [serve] sleep_after sleep once idle, each logged,
// and wake for their next message; with --exit-when-asleep the process
// ends once every agent sleeps.
func TestAgentsSleep(t *testing.T) {
	dir := t.TempDir()
	modelAddr := startModel(t)
	path := filepath.Join(dir, "agents.toml")
	writeAgents(t, path, "[serve]\nsleep_after = \"100ms\"\n\n", "a", "b")
	run := func(args ...string) (*exec.Cmd, lines, map[string]string) {
		cmd, out, log := startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, append([]string{"serve", "--agents", path}, args...)...)
		return cmd, log, out.addresses(t, 2)
	}
	message := func(addrs map[string]string, name, id string) {
		code, b, err := fleettest.Post(oneShot, addrs[name], name, fleettest.Key(name), "t", `{"id":"`+id+`","text":"hello"}`)
		if err != nil {
			t.Fatal(err)
		}
		if code != 200 {
			t.Fatalf("%s's message %s: %d %s", name, id, code, b)
		}
	}

	cmd, log, addrs := run()
	message(addrs, "a", "m1")
	log.wait(t, "a asleep", `"agent asleep"`, `"agent":"a"`)
	message(addrs, "a", "m2")
	log.wait(t, "a awake", `"agent awake"`, `"agent":"a"`)
	log.wait(t, "a asleep again", `"agent asleep"`, `"agent":"a"`)
	if err := terminate(cmd); err != nil {
		t.Fatalf("exit: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "a", "chats", "t", "events.jsonl"))
	if n := strings.Count(string(b), `"type":"answer"`); n != 2 {
		t.Errorf("a holds %d answers, want 2:\n%s", n, b)
	}

	cmd, log, _ = run("--exit-when-asleep")
	log.wait(t, "every agent asleep", "every agent asleep")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit once every agent slept: %v", err)
	}
}
