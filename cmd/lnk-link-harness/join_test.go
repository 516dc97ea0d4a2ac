package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/store/event"
)

// Agents join and leave a running process by SIGHUP while each is sent
// messages without pause: the agents that stay answer every message 200;
// every message one that left was asked is answered in its conversation;
// the ones that joined answer; and a file that cannot be read changes
// nothing, its line said in the log.
func TestAgentsJoinAndLeave(t *testing.T) {
	dir := t.TempDir()
	modelAddr := startModel(t)
	keyOf := fleettest.Key
	// k, sent nothing but single messages, has its key changed.
	os.Mkdir(filepath.Join(dir, "k"), 0o700)
	kKey, kNewKey := fleettest.KeyFile(t, dir, "k"), fleettest.KeyFile(t, dir, "k-new")
	kEntry := func(keyFile string) string { return fleettest.Entry("k", filepath.Join(dir, "k"), keyFile) }
	path := filepath.Join(dir, "agents.toml")
	write := func(k string, names ...string) { writeAgents(t, path, k, names...) }
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
	write(kEntry(kKey), first...)

	cmd, out, log := startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, "serve", "--agents", path)
	addrs := out.addresses(t, n+1)
	send := func(name, key, thread string) int {
		code, _, err := fleettest.Post(oneShot, addrs[name], name, key, thread, `{"text":"still here?"}`)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return code
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
				code, _, err := fleettest.Post(oneShot, base, name, keyOf(name), "t", `{"id":"`+id+`","text":"hi `+id+`"}`)
				s := sent{agent: name, id: id, code: code, err: err}
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
	write(kEntry(kNewKey), append(append([]string(nil), stay...), joined...)...)
	cmd.Process.Signal(syscall.SIGHUP)
	maps.Copy(addrs, out.addresses(t, len(joined)))
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
	os.WriteFile(path, []byte(fleettest.Agent(t, dir, stay[0])+fleettest.Agent(t, dir, stay[1])+"[[agent]]\nname = \"c0\"\nhome = \"/nowhere\"\nkey_file = \"/nowhere\"\nlisten = 7\n"), 0o600)
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
	if err := terminate(cmd); err != nil {
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
