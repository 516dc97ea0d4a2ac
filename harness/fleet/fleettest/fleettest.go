package fleettest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Key is the key of the test agent name: its name in a line of 16 bytes
// and more, as a key must be.
func Key(name string) string { return "key-of-" + name + "-0123456789abcdef" }

// KeyFile writes Key(name) to dir/NAME.key, a line of mode 0600, and
// returns its path.
func KeyFile(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name+".key")
	if err := os.WriteFile(path, []byte(Key(name)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Agent makes the agent name a home, dir/NAME (kept if it is there), and
// a key file (KeyFile), and returns its entry of an agents file, env
// ("KEY=value" each, in order) its env table when there is any.
func Agent(t testing.TB, dir, name string, env ...string) string {
	t.Helper()
	home := filepath.Join(dir, name)
	if err := os.Mkdir(home, 0o700); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	return Entry(name, home, KeyFile(t, dir, name), env...)
}

// Entry is the [[agent]] entry of an agents file serving name from home
// with the key in keyFile, and, when env has any ("KEY=value" each), its
// [agent.env] table in env's order; a blank line ends it.
func Entry(name, home, keyFile string, env ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[[agent]]\nname = %q\nhome = %q\nkey_file = %q\n", name, home, keyFile)
	if len(env) > 0 {
		b.WriteString("[agent.env]\n")
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s = %q\n", k, v)
	}
	b.WriteString("\n")
	return b.String()
}

// Post sends body as a message to the thread of the agent name served at
// base (http://ADDR), with key, on client, and returns the answer's status
// and body.
func Post(client *http.Client, base, name, key, thread, body string) (int, string, error) {
	return Do(client, http.MethodPost, base+"/v1/agents/"+name+"/chats/"+thread+"/messages", key, body)
}

// Do sends a request of method to url with body (none when "") and the
// agent's key, on client, and returns the answer's status and as much of
// its body as could be read: an error is the request's alone.
func Do(client *http.Client, method, url, key, body string) (int, string, error) {
	resp, b, err := Exchange(client, method, url, key, body)
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, b, nil
}

// Exchange is Do with the headers hdr too, a name and a value each, and
// the answer whole: its status, its headers, and its body, closed, as
// much of it as could be read.
func Exchange(client *http.Client, method, url, key, body string, hdr ...string) (*http.Response, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

// Listening reads a line a fleet prints once an agent listens, "listening
// on ADDR for NAME", or "listening on ADDR" when the fleet serves one
// agent from flags, and returns the agent's name ("" when the line names
// none) and base URL, http://ADDR.
func Listening(line string) (name, base string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	addr, name, _ := strings.Cut(rest, " for ")
	if !ok || addr == "" || strings.ContainsAny(addr, " \t") {
		return "", "", fmt.Errorf("not a listening line: %q", line)
	}
	return name, "http://" + addr, nil
}

// Peer starts the test binary again, running no test, in a process of its
// own with env ("KEY=value") added to this process's environment: its
// TestMain, seeing env, serves what the test talks to (a model, a tool
// server), so that nothing it holds is counted as the test's. Peer returns
// the first line it writes, trimmed; the process's standard input is closed
// at the test's end, which is its cue to end, and it is waited for.
func Peer(t testing.TB, env string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the peer process said %q: %v", line, err)
	}
	return strings.TrimSpace(line)
}
