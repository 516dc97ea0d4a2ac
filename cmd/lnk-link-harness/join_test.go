package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
)

// lines hands over a program's output a line at a time.
type lines chan string

func readLines(r io.Reader) lines {
	c := make(lines, 1<<16) // room for every line a test reads later: a full pipe would stall the program
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}

// startWatched starts lnk-link-harness with args and env added to this
// process's environment, its output and log read a line at a time; it is
// killed at the test's end if it is still running.
func startWatched(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, out, log lines) {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(filepath.Join(bin, "lnk-link-harness"), args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, readLines(stdout), readLines(stderr)
}

// wait reads lines until one holds every one of want, and returns it.
func (c lines) wait(t *testing.T, what string, want ...string) string {
	t.Helper()
	hang := time.After(2 * time.Minute) // a bound on a hang, never a pass
	for {
		select {
		case l, ok := <-c:
			if !ok {
				t.Fatalf("waiting for %s: the output ended", what)
			}
			all := true
			for _, w := range want {
				all = all && strings.Contains(l, w)
			}
			if all {
				return l
			}
		case <-hang:
			t.Fatalf("waiting for %s: no such line", what)
		}
	}
}

// Agents join and leave a running process by SIGHUP while each is sent
// messages without pause: the agents that stay answer every message 200;
// every message one that left was asked is answered in its conversation;
// the ones that joined answer; and a file that cannot be read changes
// nothing, its line said in the log.
func TestAgentsJoinAndLeave(t *testing.T) {
	dir := t.TempDir()
	_, modelAddr := start(t, nil, "lnk", "scripted-model", "--listen", "127.0.0.1:0")
	keyOf := func(name string) string { return "key-of-" + name + "-0123456789abcdef" }
	entry := func(name string) string {
		home := filepath.Join(dir, name)
		os.Mkdir(home, 0o700)
		os.WriteFile(filepath.Join(dir, name+".key"), []byte(keyOf(name)+"\n"), 0o600)
		return fmt.Sprintf("[[agent]]\nname = %q\nhome = %q\nkey_file = %q\n\n", name, home, filepath.Join(dir, name+".key"))
	}
	// k, sent nothing but single messages, has its key changed.
	os.Mkdir(filepath.Join(dir, "k"), 0o700)
	os.WriteFile(filepath.Join(dir, "k.key"), []byte(keyOf("k")+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "k.new.key"), []byte(keyOf("k-new")+"\n"), 0o600)
	kEntry := func(keyFile string) string {
		return fmt.Sprintf("[[agent]]\nname = \"k\"\nhome = %q\nkey_file = %q\n\n", filepath.Join(dir, "k"), filepath.Join(dir, keyFile))
	}
	path := filepath.Join(dir, "agents.toml")
	write := func(k string, names ...string) {
		var b strings.Builder
		b.WriteString(k)
		for _, n := range names {
			b.WriteString(entry(n))
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const n, moved = 16, 4 // agents at first, and how many of them leave (as many join)
	var first, stay, gone, joined []string
	for i := range n {
		name := fmt.Sprintf("a%d", i)
		first = append(first, name)
		if i < moved {
			gone = append(gone, name)
			joined = append(joined, fmt.Sprintf("b%d", i))
		} else {
			stay = append(stay, name)
		}
	}
	write(kEntry("k.key"), first...)

	cmd, out, log := startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, "serve", "--agents", path)
	addrs := map[string]string{}
	listening := func() {
		l := out.wait(t, "a listening line", "listening on ")
		var addr, name string
		if _, err := fmt.Sscanf(l, "listening on %s for %s", &addr, &name); err != nil {
			t.Fatalf("printed %q: %v", l, err)
		}
		addrs[name] = "http://" + addr
	}
	for range n + 1 {
		listening()
	}
	send := func(name, key, thread string) int {
		req, _ := http.NewRequest("POST", addrs[name]+"/v1/agents/"+name+"/chats/"+thread+"/messages", strings.NewReader(`{"text":"still here?"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("k", keyOf("k"), "before"); code != 200 {
		t.Fatalf("k with its key: %d", code)
	}

	// Each agent is sent messages, one connection each, until stopped.
	type sent struct {
		agent, id string
		code      int
		err       error
	}
	var mu sync.Mutex
	var results []sent
	stop := make(chan struct{})
	var wg sync.WaitGroup
	answered := make(chan string, 64)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	load := func(name, base string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-%d", name, i)
				req, _ := http.NewRequest("POST", base+"/v1/agents/"+name+"/chats/t/messages", strings.NewReader(`{"id":"`+id+`","text":"hi `+id+`"}`))
				req.Header.Set("Authorization", "Bearer "+keyOf(name))
				resp, err := client.Do(req)
				s := sent{agent: name, id: id, err: err}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					s.code = resp.StatusCode
				}
				mu.Lock()
				results = append(results, s)
				mu.Unlock()
				if i == 0 {
					answered <- name
				}
				if err != nil {
					return // its listener is gone
				}
			}
		}()
	}
	for _, name := range first {
		load(name, addrs[name])
	}
	for range first {
		<-answered
	}

	// Some leave, as many join, and k's key changes.
	write(kEntry("k.new.key"), append(append([]string(nil), stay...), joined...)...)
	cmd.Process.Signal(syscall.SIGHUP)
	for range joined {
		listening()
	}
	// Each that left says so, and k sleeps, to wake with its new key.
	left, kAsleep := map[string]bool{}, false
	for len(left) < len(gone) || !kAsleep {
		l := log.wait(t, "the agents gone, and k asleep", `"agent`)
		kAsleep = kAsleep || strings.Contains(l, `"agent asleep"`) && strings.Contains(l, `"agent":"k"`)
		for _, n := range gone {
			if strings.Contains(l, `"agent left"`) && strings.Contains(l, `"agent":"`+n+`"`) {
				left[n] = true
			}
		}
	}
	if code := send("k", keyOf("k"), "after"); code != 401 {
		t.Errorf("k with its old key after the change: %d, want 401", code)
	}
	if code := send("k", keyOf("k-new"), "after"); code != 200 {
		t.Errorf("k with its new key: %d, want 200", code)
	}
	for _, name := range joined {
		if addrs[name] == "" {
			t.Fatalf("%s did not join: %v", name, addrs)
		}
		load(name, addrs[name])
		<-answered
	}

	// A file that cannot be read changes nothing, and says its line.
	os.WriteFile(path, []byte(entry(stay[0])+entry(stay[1])+"[[agent]]\nname = \"c0\"\nhome = \"/nowhere\"\nkey_file = \"/nowhere\"\nlisten = 7\n"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	l := log.wait(t, "the refusal", "nothing changed")
	if !strings.Contains(l, "agents.toml:") {
		t.Errorf("the refusal says no line: %s", l)
	}
	// Everyone served still answers, after the refusal.
	for _, name := range append(append([]string(nil), stay...), joined...) {
		if code := send(name, keyOf(name), "after"); code != 200 {
			t.Errorf("%s after the refused file: %d", name, code)
		}
	}
	if code := send("k", keyOf("k-new"), "after"); code != 200 {
		t.Errorf("k after the refused file: %d", code)
	}
	for _, name := range gone {
		if _, err := http.Get(addrs[name] + "/healthz"); err == nil {
			t.Errorf("%s left, and its address still answers", name)
		}
	}

	close(stop)
	wg.Wait()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}

	// The agents that stayed or joined answered every message 200; those
	// that left answered each one they were asked, and then took no more.
	count := map[string]int{}
	for _, s := range results {
		gone := slices.Contains(gone, s.agent)
		switch {
		case s.err == nil && s.code == 200:
			count[s.agent]++
		case gone && s.err != nil && !errors.Is(s.err, io.ErrUnexpectedEOF):
		default:
			t.Errorf("%s's message %s: %d %v", s.agent, s.id, s.code, s.err)
		}
	}
	for _, name := range append(first, joined...) {
		if count[name] == 0 {
			t.Errorf("%s answered no message", name)
		}
		b, err := os.ReadFile(filepath.Join(dir, name, "chats", "t", "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		evs := strings.Split(strings.TrimSpace(string(b)), "\n")
		for i, e := range evs {
			if strings.Contains(e, `"type":"`+event.TypeMessage+`"`) && (i+1 == len(evs) || !strings.Contains(evs[i+1], `"type":"`+event.TypeAnswer+`"`)) {
				t.Errorf("%s: a message without its answer: %s", name, e)
			}
		}
		if n := strings.Count(string(b), `"type":"`+event.TypeAnswer+`"`); n < count[name] {
			t.Errorf("%s: %d answers kept, %d told", name, n, count[name])
		}
	}
}
