package fleet

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/internal/epoll"
	"lnk.dev/linkharness/harness/internal/httpconn"
)

// openFiles counts the process's open files, sockets among them.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count open files: %v", err)
	}
	return len(fds)
}

// settle waits for the goroutines and open files to come back to want:
// what an agent let go of ends a moment after (a connection's reader
// goroutine, say). The wait is bounded only to report a hang.
func settle(t *testing.T, goroutines, files int) {
	t.Helper()
	hang := time.Now().Add(30 * time.Second)
	for {
		g, f := runtime.NumGoroutine(), openFiles(t)
		if g <= goroutines && f <= files {
			return
		}
		if time.Now().After(hang) {
			buf := make([]byte, 1<<20)
			t.Fatalf("asleep, the agents hold %d goroutines and %d open files more than their listeners' sockets:\n%s",
				g-goroutines, f-files, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// noneAccepting waits until no goroutine accepts on an agent's listener:
// a Serve the waiter started returns once it took its connection. The wait
// is bounded only to report a hang.
func noneAccepting(t *testing.T) {
	t.Helper()
	hang := time.Now().Add(30 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		stacks := buf[:runtime.Stack(buf, true)]
		if !bytes.Contains(stacks, []byte("fleet.(*conns).serve(")) {
			return
		}
		if time.Now().After(hang) {
			t.Fatalf("awake, an agent has a goroutine accepting on its listener:\n%s", stacks)
		}
		runtime.Gosched()
	}
}

// An agent asleep holds nothing of its own beyond its listener's socket,
// not even a goroutine accepting on it (the process's one waiter watches
// them all): asleep, fresh or once they answered a message with a tool
// call and woke again for the next, the agents hold the goroutines and
// open files the process held with none, and one socket each; awake and
// idle they hold no more descriptors than that either, but the process's
// connections to the model proxy.
func TestAsleepHoldsNothing(t *testing.T) {
	const n = 5
	dir := t.TempDir()
	modelAddr, mem := startPeers(t, filepath.Join(dir, "tools"))

	var text strings.Builder
	for i := range n {
		text.WriteString(fleettest.Agent(t, dir, fmt.Sprintf("a%d", i), "LNK_MEMORY="+mem, "LNK_MODEL_PROXY=http://"+modelAddr, "LNK_HOME="+dir))
	}
	var out strings.Builder
	f, file := fleetOf(t, dir, text.String(), os.Environ(), &out, n)
	set, err := epoll.New()
	if err != nil {
		t.Skipf("no epoll set: %v", err)
	}
	f.waiter, f.watch = newWaiter(set), httpconn.NewWatcher(set)
	// What the process holds with no agent: asleep, each agent adds its
	// listener's socket alone, and no goroutine.
	runtime.GC()
	goroutines, files := runtime.NumGoroutine(), openFiles(t)+n
	js, err := f.prepare(file.Units)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.join(js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll)
	addrs := addresses(t, out.String())
	// Each asleep as the timer would put it, no request or turn running.
	sleepAll := func() {
		for _, r := range f.running {
			r.mu.Lock()
			if r.held != nil {
				r.sleep()
			}
			r.mu.Unlock()
		}
		if !f.asleep() {
			t.Fatal("an agent is awake after sleeping")
		}
		f.rest() // as Run's loop does once every agent sleeps
	}
	sleepAll()
	settle(t, goroutines, files)
	// No collection from here: a file or connection let go of without
	// being closed would be closed by its finalizer, and go unseen.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// Every agent asleep, the collector is quiet until one wakes.
	f.quiet.start(f.asleep)
	f.join(nil) // a reading of the agents file that joins none wakes none
	if !f.quiet.on {
		t.Error("every agent asleep, the collector is not quiet")
	}

	// Its connections kept alive: asleep, the agent closes them (the
	// client's side of each ends too, counted here as well).
	client := &http.Client{Transport: &http.Transport{}}
	for round := range 2 { // the first message after waking is answered like any other, each time
		for name, base := range addrs {
			code, b, err := fleettest.Post(client, base, name, fleettest.Key(name), "t", fmt.Sprintf(`{"text":"note %d"}`, round))
			if err != nil {
				t.Fatal(err)
			}
			if code != 200 || !strings.Contains(b, `"kept"`) {
				t.Fatalf("%s, round %d: %d %s", name, round, code, b)
			}
		}
		if f.quiet.on {
			t.Error("agents awake, the collector is quiet still")
		}
		// Awake and idle, an agent holds no descriptor of its own either:
		// its home is held by its turns alone, its tools' connections end
		// with its last turn, and the model proxy's are the process's.
		client.CloseIdleConnections()
		settle(t, goroutines+n, files+budget.MaxIdleModel)
		// Awake, an agent has no accept loop either: the waiter watches its
		// listener, and a Serve lasts for the one connection it woke for.
		noneAccepting(t)
		sleepAll()
		settle(t, goroutines, files)
	}
	notes, _ := os.ReadFile(filepath.Join(dir, "tools", "memory", "notes.md"))
	if got := strings.Count(string(notes), "kept"); got != 2*n {
		t.Errorf("the tool was called %d times, want %d", got, 2*n)
	}
}
