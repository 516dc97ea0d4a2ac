package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Agents of a file with [serve] sleep_after sleep once idle, each logged,
// and wake for their next message; with --exit-when-asleep the process
// ends once every agent sleeps.
func TestAgentsSleep(t *testing.T) {
	dir := t.TempDir()
	_, modelAddr := start(t, nil, "lnk", "scripted-model", "--listen", "127.0.0.1:0")
	text := "[serve]\nsleep_after = \"100ms\"\n\n"
	for _, name := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(dir, name), 0o700)
		key := filepath.Join(dir, name+".key")
		os.WriteFile(key, []byte("key-of-"+name+"-0123456789abcdef\n"), 0o600)
		text += fmt.Sprintf("[[agent]]\nname = %q\nhome = %q\nkey_file = %q\n\n", name, filepath.Join(dir, name), key)
	}
	path := filepath.Join(dir, "agents.toml")
	os.WriteFile(path, []byte(text), 0o600)
	run := func(args ...string) (*exec.Cmd, lines, map[string]string) {
		cmd, out, log := startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, append([]string{"serve", "--agents", path}, args...)...)
		addrs := map[string]string{}
		for range 2 {
			var addr, name string
			fmt.Sscanf(out.wait(t, "a listening line", "listening on "), "listening on %s for %s", &addr, &name)
			addrs[name] = "http://" + addr
		}
		return cmd, log, addrs
	}
	message := func(addrs map[string]string, name, id string) {
		req, _ := http.NewRequest("POST", addrs[name]+"/v1/agents/"+name+"/chats/t/messages", strings.NewReader(`{"id":"`+id+`","text":"hello"}`))
		req.Header.Set("Authorization", "Bearer key-of-"+name+"-0123456789abcdef")
		// A connection of its own: an agent going to sleep closes its idle
		// ones, and a POST on a connection closed under it is not sent again.
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s's message %s: %s %s", name, id, resp.Status, b)
		}
	}

	cmd, log, addrs := run()
	message(addrs, "a", "m1")
	log.wait(t, "a asleep", `"agent asleep"`, `"agent":"a"`)
	message(addrs, "a", "m2")
	log.wait(t, "a awake", `"agent awake"`, `"agent":"a"`)
	log.wait(t, "a asleep again", `"agent asleep"`, `"agent":"a"`)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
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
