package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/store/event"
)

// A hundred agents are sent messages without pause, one connection each,
// while a fifth of them leave and as many join by one SIGHUP. Every message
// to an agent that stayed is answered 200; a leaving agent answers every
// message it took (each one in its store has its answer) and refuses the
// rest cleanly: connection refused, or reset before the server read it (it
// is then not in the store), or a 4xx, never a 5xx; the agents that joined
// answer, and every agent that stayed answers after the reload too. The
// figures (messages, answered, refused, 5xx, the reload's time) are logged:
// go test -v -run TestJoinAndLeaveUnderLoad ./cmd/lnk-link-harness.
func TestJoinAndLeaveUnderLoad(t *testing.T) {
	n, moved := 100, 20 // agents at first, and how many of them leave (as many join)
	if testing.Short() {
		n, moved = 25, 5
	}
	dir := t.TempDir()
	modelAddr := startModel(t)
	path := filepath.Join(dir, "agents.toml")
	write := func(names []string) { writeAgents(t, path, "", names...) }
	var first, stay, gone, joined []string
	isGone := map[string]bool{}
	for i := range n {
		name := fmt.Sprintf("a%d", i)
		first = append(first, name)
		if i < moved {
			gone = append(gone, name)
			isGone[name] = true
			joined = append(joined, fmt.Sprintf("b%d", i))
		} else {
			stay = append(stay, name)
		}
	}
	write(first)

	cmd, out, log := startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, "serve", "--agents", path)
	addrs := out.addresses(t, n)

	// phase is 0 before the SIGHUP, 1 from the moment it is sent, 2 once
	// the file was read again and every leaving agent is gone.
	var phase atomic.Int32
	type sent struct {
		agent, text string
		began, done int32 // the phase when it was sent and when it ended
		code        int
		err         error
	}
	var mu sync.Mutex
	var results []sent
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// answered gets an agent's name at its rounds-th 200, and again at its
	// rounds-th 200 to a message sent in phase 2.
	const rounds = 5
	answered := make(chan string, 2*(n+moved))
	load := func(name string) {
		base := addrs[name]
		wg.Go(func() {
			ok, after := 0, 0
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("hi %s-%d", name, i)
				s := sent{agent: name, text: text, began: phase.Load()}
				code, _, err := fleettest.Post(oneShot, base, name, fleettest.Key(name), "t", `{"text":"`+text+`"}`)
				s.code, s.err, s.done = code, err, phase.Load()
				mu.Lock()
				results = append(results, s)
				mu.Unlock()
				if s.code == 200 {
					if ok++; ok == rounds {
						answered <- name
					}
					if s.began == 2 {
						if after++; after == rounds {
							answered <- name
						}
					}
				}
				if errors.Is(err, syscall.ECONNREFUSED) {
					return // its listener is gone
				}
			}
		})
	}
	for _, name := range first {
		load(name)
	}
	for range first {
		<-answered
	}

	// A fifth leave, as many join, in one SIGHUP under the load.
	write(append(append([]string(nil), stay...), joined...))
	phase.Store(1)
	hup := time.Now()
	cmd.Process.Signal(syscall.SIGHUP)
	maps.Copy(addrs, out.addresses(t, len(joined)))
	left, read := map[string]bool{}, time.Duration(0)
	for len(left) < len(gone) || read == 0 {
		l := log.wait(t, "the file read again and the agents gone", `"agent`)
		if strings.Contains(l, `"agents file read again"`) {
			read = time.Since(hup)
		}
		for _, n := range gone {
			if strings.Contains(l, `"agent left"`) && strings.Contains(l, `"agent":"`+n+`"`) {
				left[n] = true
			}
		}
	}
	allLeft := time.Since(hup)
	phase.Store(2)
	for _, name := range joined {
		if addrs[name] == "" {
			t.Fatalf("%s did not join: %v", name, addrs)
		}
		load(name)
	}
	// Every agent served now answers rounds messages sent after the
	// reload: the joined ones count twice (all theirs are in phase 2).
	for range 2*len(joined) + len(stay) {
		<-answered
	}
	close(stop)
	wg.Wait()
	if err := terminate(cmd); err != nil {
		t.Fatalf("exit: %v", err)
	}

	// Sorted by what each message met.
	type tally struct{ asked, ok, refused, reset, fourxx, fivexx int }
	var stayed, leaving, joining tally
	store := map[string]string{}
	kept := func(name string) string {
		if b, ok := store[name]; ok {
			return b
		}
		b, err := os.ReadFile(filepath.Join(dir, name, "chats", "t", "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		store[name] = string(b)
		return store[name]
	}
	for _, s := range results {
		g := &stayed
		switch {
		case isGone[s.agent]:
			g = &leaving
		case strings.HasPrefix(s.agent, "b"):
			g = &joining
		}
		g.asked++
		switch {
		case s.err == nil && s.code == 200:
			g.ok++
		case s.err == nil && s.code >= 500:
			g.fivexx++
			t.Errorf("%s's message %q: %d", s.agent, s.text, s.code)
		case isGone[s.agent] && s.err == nil && s.code >= 400:
			g.fourxx++
			if s.began == 0 && s.done == 0 {
				t.Errorf("%s's message %q, asked and done before the SIGHUP: %d", s.agent, s.text, s.code)
			}
		case isGone[s.agent] && s.err != nil && s.done > 0 && !errors.Is(s.err, io.ErrUnexpectedEOF):
			// Refused or reset before the server read it: then it is not
			// in the agent's store, a message taken and not answered.
			if errors.Is(s.err, syscall.ECONNREFUSED) {
				g.refused++
			} else {
				g.reset++
			}
			if strings.Contains(kept(s.agent), s.text+`"`) {
				t.Errorf("%s's message %q is kept, yet its caller was told %v", s.agent, s.text, s.err)
			}
		default:
			t.Errorf("%s's message %q: %d %v", s.agent, s.text, s.code, s.err)
		}
	}
	for _, name := range append(append([]string(nil), first...), joined...) {
		evs := strings.Split(strings.TrimSpace(kept(name)), "\n")
		for i, e := range evs {
			if strings.Contains(e, `"type":"`+event.TypeMessage+`"`) && (i+1 == len(evs) || !strings.Contains(evs[i+1], `"type":"`+event.TypeAnswer+`"`)) {
				t.Errorf("%s: a message without its answer: %s", name, e)
			}
		}
	}
	for _, g := range []struct {
		what string
		tally
	}{{"stayed", stayed}, {"left", leaving}, {"joined", joining}} {
		t.Logf("%d agents %s: %d messages asked, %d answered 200, %d connection refused, %d reset unread, %d 4xx, %d 5xx",
			map[string]int{"stayed": len(stay), "left": len(gone), "joined": len(joined)}[g.what], g.what, g.asked, g.ok, g.refused, g.reset, g.fourxx, g.fivexx)
	}
	t.Logf("reload: file read again %v after the SIGHUP, every leaving agent gone %v after it", read.Round(time.Millisecond), allLeft.Round(time.Millisecond))
	if stayed.ok != stayed.asked || joining.ok != joining.asked {
		t.Errorf("stayed %d/%d answered, joined %d/%d", stayed.ok, stayed.asked, joining.ok, joining.asked)
	}
}
