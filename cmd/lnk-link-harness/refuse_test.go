package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// refusal starts serve for an agent whose spec is spec (none when "") in
// the environment env, and returns what it said on standard error, having
// failed with exit status 1 without printing an address.
func refusal(t *testing.T, spec string, env ...string) string {
	t.Helper()
	return refusalKey(t, spec, 0o600, env...)
}

// refusalKey is refusal with a key file of mode keyMode.
func refusalKey(t *testing.T, spec string, keyMode os.FileMode, env ...string) string {
	t.Helper()
	dir := t.TempDir()
	h := filepath.Join(dir, "ada")
	os.Mkdir(h, 0o700)
	if spec != "" {
		p := filepath.Join(dir, "spec.toml")
		os.WriteFile(p, []byte(spec), 0o600)
		if out, err := command(t, nil, "lnk", "agent", "configure", "--spec", p, "--home", h).CombinedOutput(); err != nil {
			t.Fatalf("configure: %v\n%s", err, out)
		}
	}
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("k-e2e-0123456789abcdef0123456789\n"), 0o600)
	os.Chmod(keyFile, keyMode)
	cmd := command(t, nil, "lnk-link-harness", "serve", "--home", h, "--listen", "127.0.0.1:0", "--key-file", keyFile)
	cmd.Env = append(withoutProxy(os.Environ()), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Its first line, or nothing once it ends: a serve that started says
	// where it listens, and is stopped here rather than waited for.
	stdout, _ := bufio.NewReader(out).ReadString('\n')
	if len(stdout) != 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("serve started, printing %q; it said %s", stdout, stderr.String())
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("serve: %v, want exit status 1; it said %s", err, stderr.String())
	}
	return stderr.String()
}

// withoutProxy is environ without the model proxy's variables.
func withoutProxy(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "LNK_MODEL_PROXY") && !strings.HasPrefix(kv, "LNK_STORE_BRIDGE") {
			out = append(out, kv)
		}
	}
	return out
}

// serve refuses to start without a model proxy for the agent's provider,
// saying what to set; a proxy for another provider alone does not do.
func TestServeNeedsModelProxy(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		env        []string
		want       []string
	}{
		{"none", "", nil, []string{"anthropic", "LNK_MODEL_PROXY", "LNK_MODEL_PROXY_ANTHROPIC"}},
		{"another provider's", "[model]\nname = \"openai/gpt-6\"\n", []string{"LNK_MODEL_PROXY_ANTHROPIC=http://127.0.0.1:1"}, []string{"openai", "LNK_MODEL_PROXY_OPENAI"}},
		{"the fallback's", "[model]\nname = \"openai/gpt-6\"\nfallback = \"anthropic/claude-opus-5-5\"\n", []string{"LNK_MODEL_PROXY_OPENAI=http://127.0.0.1:1"}, []string{"fallback", "claude-opus-5-5", "LNK_MODEL_PROXY_ANTHROPIC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			said := refusal(t, tc.spec, tc.env...)
			for _, w := range tc.want {
				if !strings.Contains(said, w) {
					t.Errorf("serve said %q, which does not name %s", said, w)
				}
			}
		})
	}
}

// serve refuses a key file its group or others may read, as ssh refuses
// such a private key, saying the mode and the chmod that fixes it.
func TestServeRefusesOpenKey(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o666, 0o640} {
		said := refusalKey(t, "", mode, "LNK_MODEL_PROXY=http://127.0.0.1:1")
		for _, w := range []string{fmt.Sprintf("mode %#o", mode), "chmod 600"} {
			if !strings.Contains(said, w) {
				t.Errorf("serve with a key of mode %#o said %q, which does not name %s", mode, said, w)
			}
		}
	}
}

// serve refuses to start for an agent whose conversations' kind is no way
// of keeping them, naming the kinds; and a turn after its spec says so
// fails with the same error when it starts a conversation, since each turn
// reads the settings again. A conversation already kept is read where it
// is: changing the spec moves nothing.
func TestServeBadStorageKind(t *testing.T) {
	said := refusal(t, "[storage]\nconversations = \"nosuch\"\n", "LNK_MODEL_PROXY=http://127.0.0.1:1")
	for _, w := range []string{`"nosuch"`, "log, compact, or a driver's name", "no program lnk-nosuch"} {
		if !strings.Contains(said, w) {
			t.Errorf("serve said %q, which does not name %s", said, w)
		}
	}

	h := startHarness(t, "", false)
	if _, err := h.message("t", "m1", "hello"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"storage": {"conversations": "nosuch"}}`), 0o600)
	_, err := h.message("new-thread", "m2", "hello")
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "log, compact, or a driver") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("a turn with a bad kind: %v", err)
	}
	if names, _ := os.ReadDir(filepath.Join(h.home, "chats", "new-thread")); len(names) != 0 {
		t.Errorf("the new thread's folder holds %v", names)
	}
	if _, err := h.message("t", "m3", "again"); err != nil {
		t.Fatalf("a turn of a kept conversation, its spec's kind bad: %v", err)
	}
}

// A process whose agents cannot fit under its descriptor limit refuses to
// start, saying what they need and how to raise the limit, and serves
// nothing: 20,000 agents under a limit of 20,000.
func TestRefusedPastDescriptors(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&text, "[[agent]]\nname = \"a%d\"\nhome = %q\nkey_file = %q\n\n", i, filepath.Join(dir, "a"), filepath.Join(dir, "key"))
	}
	path := filepath.Join(dir, "agents.toml")
	if err := os.WriteFile(path, []byte(text.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -n 20000 && exec "$0" serve --agents "$1"`, filepath.Join(bin, "lnk-link-harness"), path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(stderr.String(), "20000 agents need 20081 descriptors") ||
		!strings.Contains(stderr.String(), "over the limit of 20000") || !strings.Contains(stderr.String(), "ulimit -n") {
		t.Fatalf("20,000 agents under 20,000 descriptors: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("a refused process served: %s", stdout.String())
	}
}
