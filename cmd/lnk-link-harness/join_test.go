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
	c := make(lines, 1024)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
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
	path := filepath.Join(dir, "agents.toml")
	write := func(names ...string) {
		var b strings.Builder
		for _, n := range names {
			b.WriteString(entry(n))
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first := []string{"a0", "a1", "a2", "a3", "a4", "a5"}
	write(first...)

	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "lnk-link-harness"), "serve", "--agents", path)
	cmd.Env = append(os.Environ(), "LNK_MODEL_PROXY=http://"+modelAddr)
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
	out, log := readLines(stdout), readLines(stderr)
	addrs := map[string]string{}
	listening := func() {
		l := out.wait(t, "a listening line", "listening on ")
		var addr, name string
		if _, err := fmt.Sscanf(l, "listening on %s for %s", &addr, &name); err != nil {
			t.Fatalf("printed %q: %v", l, err)
		}
		addrs[name] = "http://" + addr
	}
	for range first {
		listening()
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

	// a0 and a1 leave, b0 and b1 join.
	write("a2", "a3", "a4", "a5", "b0", "b1")
	cmd.Process.Signal(syscall.SIGHUP)
	listening()
	listening()
	left := map[string]bool{}
	for len(left) < 2 {
		l := log.wait(t, "agent left", `"agent left"`)
		for _, n := range []string{"a0", "a1"} {
			if strings.Contains(l, `"agent":"`+n+`"`) {
				left[n] = true
			}
		}
	}
	for _, name := range []string{"b0", "b1"} {
		if addrs[name] == "" {
			t.Fatalf("%s did not join: %v", name, addrs)
		}
		load(name, addrs[name])
		<-answered
	}

	// A file that cannot be read changes nothing, and says its line.
	os.WriteFile(path, []byte(entry("a2")+entry("a3")+"[[agent]]\nname = \"c0\"\nhome = \"/nowhere\"\nkey_file = \"/nowhere\"\nlisten = 7\n"), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	l := log.wait(t, "the refusal", "nothing changed")
	if !strings.Contains(l, "agents.toml:") {
		t.Errorf("the refusal says no line: %s", l)
	}
	// Everyone served still answers, after the refusal.
	for _, name := range []string{"a2", "a3", "a4", "a5", "b0", "b1"} {
		req, _ := http.NewRequest("POST", addrs[name]+"/v1/agents/"+name+"/chats/after/messages", strings.NewReader(`{"text":"still here?"}`))
		req.Header.Set("Authorization", "Bearer "+keyOf(name))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s after the refused file: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s after the refused file: %s", name, resp.Status)
		}
	}
	if _, err := http.Get(addrs["a0"] + "/healthz"); err == nil {
		t.Errorf("a0 left, and its address still answers")
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
		gone := s.agent == "a0" || s.agent == "a1"
		switch {
		case s.err == nil && s.code == 200:
			count[s.agent]++
		case gone && s.err != nil && !errors.Is(s.err, io.ErrUnexpectedEOF):
		default:
			t.Errorf("%s's message %s: %d %v", s.agent, s.id, s.code, s.err)
		}
	}
	for _, name := range []string{"a0", "a1", "a2", "a3", "a4", "a5", "b0", "b1"} {
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
