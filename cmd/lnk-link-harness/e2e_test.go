package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/event"
)

type harness struct {
	home, url, key string
	cmd            *exec.Cmd
	log            *bytes.Buffer // its standard error: JSON log lines; read once it ended
	asked          chan struct{} // a send for each request to the model, as it comes
	env, args      []string      // how it was started, to start it again
}

// startHarness starts the scripted model and the harness asking it. With
// watch, the harness reaches the model through this process, which so sees
// each request come (on harness.asked). Extra are more flags of serve.
func startHarness(t *testing.T, script string, watch bool, extra ...string) *harness {
	t.Helper()
	dir := t.TempDir()
	var modelArgs []string
	if script != "" {
		p := filepath.Join(dir, "script.toml")
		os.WriteFile(p, []byte(script), 0o600)
		modelArgs = []string{"--script", p}
	}
	h := &harness{key: "k-e2e-0123456789abcdef0123456789", asked: make(chan struct{}, 64), log: new(bytes.Buffer)}
	modelURL := "http://" + startModel(t, modelArgs...)
	if watch {
		proxy := relay(t, modelURL)
		via := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The body read whole before it is relayed: an HTTP/1 server
			// closes a request's body once its handler writes the answer's
			// head, so a relay still sending the body on (its transport's
			// write loop late on a loaded machine) fails that write, and its
			// transport then closes the stream the model is answering on.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			select {
			case h.asked <- struct{}{}:
			default:
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(via.Close)
		modelURL = via.URL
	}
	var keyFile string
	h.home, keyFile = adaHome(t, dir, "", h.key)
	h.env = []string{"LNK_MODEL_PROXY=" + modelURL}
	h.args = append([]string{"serve", "--home", h.home, "--listen", "127.0.0.1:0", "--key-file", keyFile}, extra...)
	cmd, addr := startLogged(t, h.env, h.log, "lnk-link-harness", h.args...)
	h.url, h.cmd = "http://"+addr, cmd
	return h
}

// restart starts the harness again on the same home, once it has ended.
func (h *harness) restart(t *testing.T) {
	t.Helper()
	h.log = new(bytes.Buffer)
	cmd, addr := startLogged(t, h.env, h.log, "lnk-link-harness", h.args...)
	h.url, h.cmd = "http://"+addr, cmd
}

// stopsWithin waits for the harness, told to stop, to end with exit
// status 0 within bound, a bound on a hang, never a pass.
func (h *harness) stopsWithin(t *testing.T, bound time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, h.log)
		}
	case <-time.After(bound):
		t.Fatalf("the harness did not stop within %v", bound)
	}
}

type sent struct {
	seq        int64
	text, said string
}

func (h *harness) message(thread, id, text string) (sent, error) {
	body, _ := json.Marshal(map[string]any{"id": id, "text": text, "from": map[string]string{"id": "u1", "name": "Ada"}, "owner": true, "connection": "e2e"})
	code, b, err := fleettest.Post(http.DefaultClient, h.url, "ada", h.key, thread, string(body))
	if err != nil {
		return sent{}, err
	}
	if code != 200 {
		return sent{}, fmt.Errorf("%s: %d %s", text, code, b)
	}
	var a struct {
		Seq  int64
		Text string
	}
	if err := json.Unmarshal([]byte(b), &a); err != nil {
		return sent{}, err
	}
	return sent{seq: a.Seq, text: text, said: a.Text}, nil
}

// 100 messages over HTTP on three threads, to real processes: every
// conversation's seqs run 1..n with no gap, and the copy holds exactly the
// owner's messages and the answers, in order.
func TestEndToEnd(t *testing.T) {
	h := startHarness(t, `
[[rule]]
match = "any"
text = "answer to {text}"
chunks = 3
`, false)
	threads := []string{"telegram:1", "slack:team-2", "web-3"}
	got := make([][]sent, len(threads))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	// Each thread's messages go in order from one client; the threads run
	// at once.
	for ti, thread := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := ti; i < 100; i += len(threads) {
				s, err := h.message(thread, fmt.Sprintf("m%d", i), fmt.Sprintf("message %d on %s", i, thread))
				if err != nil {
					errs <- err
					return
				}
				got[ti] = append(got[ti], s)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for ti, thread := range threads {
		total += len(got[ti])
		dir, err := home.Agent{Dir: h.home}.Path(home.Chat, thread)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var d event.Decoder
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) != 2*len(got[ti]) {
			t.Errorf("%s: %d events for %d messages", thread, len(lines), len(got[ti]))
		}
		for i, line := range lines {
			var e event.Event
			if err := d.Decode([]byte(line), &e); err != nil {
				t.Fatalf("%s line %d: %v", thread, i+1, err)
			}
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: line %d holds seq %d", thread, i+1, e.Seq)
			}
			if i == 0 && e.Thread != thread {
				t.Errorf("%s: the first event names thread %q", thread, e.Thread)
			}
		}
		var want strings.Builder
		for _, s := range got[ti] {
			// The scripted model answers the last user text, which is the
			// message's head and then its text.
			if !strings.HasPrefix(s.said, "answer to [") || !strings.HasSuffix(s.said, "]\n"+s.text) {
				t.Errorf("%s: %q answered %q", thread, s.text, s.said)
			}
			want.WriteString(s.text + "\n" + s.said + "\n")
		}
		copy, err := os.ReadFile(filepath.Join(dir, "chat.md"))
		if err != nil {
			t.Fatal(err)
		}
		if said := copySaid(string(copy)); said != want.String() {
			t.Errorf("%s: the copy holds\n%s\nwant\n%s", thread, said, want.String())
		}
		// lnk agent chat show prints the same copy, made from the events.
		out, err := command(t, nil, "lnk", "agent", "chat", "show", thread, "--home", h.home).Output()
		if err != nil {
			t.Fatalf("chat show: %v", err)
		}
		if string(out) != string(copy) {
			t.Errorf("%s: chat show differs from chat.md:\n%s\n---\n%s", thread, out, copy)
		}
	}
	if total != 100 {
		t.Errorf("%d messages answered, want 100", total)
	}
}

// copySaid is what a copy says, a line per message or answer, without
// names, times or marks.
func copySaid(copy string) string {
	var b strings.Builder
	for _, block := range strings.Split(copy, "\n\n") {
		block = strings.TrimSpace(block)
		if block == "" || strings.HasPrefix(block, "**") || strings.HasPrefix(block, "<!--") {
			continue
		}
		b.WriteString(block + "\n")
	}
	return b.String()
}

// A graceful stop says at once it is stopping (/readyz 503), refuses a new
// message 503 with Retry-After, answers every message already asked, and
// then takes no new connection.
func TestGracefulStop(t *testing.T) {
	h := startHarness(t, `
[[rule]]
match = "slow"
text = "done slowly"
latency_ms = 5000 # a slow model: the stop comes while it answers

[[rule]]
match = "any"
text = "quick"
`, true)
	if _, err := h.message("t", "warm", "warm up"); err != nil {
		t.Fatal(err)
	}
	<-h.asked // the warm-up's request
	res := make(chan error, 1)
	go func() {
		s, err := h.message("t", "slow", "slow one")
		if err == nil && s.said != "done slowly" {
			err = fmt.Errorf("answered %q", s.said)
		}
		res <- err
	}()
	<-h.asked // the message is with the model
	h.cmd.Process.Signal(syscall.SIGTERM)
	// Stopping, the process says so until it ends; the wait is bounded
	// only to report a hang.
	for hang := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get(h.url + "/readyz")
		if err != nil {
			t.Fatalf("/readyz while stopping: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(hang) {
			t.Fatalf("/readyz after SIGTERM: %s, want 503", resp.Status)
		}
		runtime.Gosched()
	}
	resp, b, err := fleettest.Exchange(http.DefaultClient, http.MethodPost, h.url+"/v1/agents/ada/chats/other/messages", h.key, `{"id":"new","text":"while stopping"}`)
	if err != nil {
		t.Fatalf("a new message while stopping: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "stopping") {
		t.Fatalf("a new message while stopping: %s Retry-After %q %s", resp.Status, resp.Header.Get("Retry-After"), b)
	}
	if err := <-res; err != nil {
		t.Fatalf("a message asked before the stop: %v", err)
	}
	h.stopsWithin(t, 10*time.Second)
	if _, err := h.message("t", "late", "after the stop"); err == nil {
		t.Fatal("a message after the stop was taken")
	}
	// The stop is logged once at its start and once at its end, with the
	// turn it waited for.
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(h.log.String()), "\n") {
		var l struct {
			Msg   string
			Turns *int64
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %q", line)
		}
		if l.Msg == "stopping" || l.Msg == "stopped" {
			n[l.Msg]++
			if l.Turns == nil || *l.Turns != 1 {
				t.Errorf("%s: %s, want 1 turn waited for", l.Msg, line)
			}
		}
	}
	if n["stopping"] != 1 || n["stopped"] != 1 {
		t.Errorf("stop logged %v, want once each:\n%s", n, h.log.String())
	}
}

// A log level that is not one refuses to start, naming the levels.
func TestLogLevel(t *testing.T) {
	out, err := command(t, nil, "lnk-link-harness", "serve", "--log-level", "loud", "--home", t.TempDir(), "--key-file", "none").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "debug, info, warn or error") {
		t.Errorf("--log-level loud: %v %s", err, out)
	}
}

// One process serves many agents of one owner, each on its own port, as
// itself; a request naming another agent needs that agent's key.
func TestManyAgents(t *testing.T) {
	dir := t.TempDir()
	modelAddr := startModel(t)
	path := filepath.Join(dir, "agents.toml")
	writeAgents(t, path, "", "ada", "bob")
	keys := map[string]string{"ada": fleettest.Key("ada"), "bob": fleettest.Key("bob")}
	cmd := command(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr}, "lnk-link-harness", "serve", "--agents", path)
	cmd.Stderr = os.Stderr
	out := startOut(t, cmd)
	defer terminate(cmd)
	addrs := out.addresses(t, 2)
	if addrs["ada"] == "" || addrs["bob"] == "" || addrs["ada"] == addrs["bob"] {
		t.Fatalf("addresses %v", addrs)
	}
	post := func(port, agent, key string) int {
		code, _, err := fleettest.Post(oneShot, addrs[port], agent, key, "t", `{"text":"hi on `+port+`'s port"}`) // two messages, not one sent again
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	for _, tc := range []struct {
		port, agent, key string
		want             int
	}{
		{"ada", "ada", keys["ada"], 200},
		{"bob", "bob", keys["bob"], 200},
		{"ada", "bob", keys["ada"], 401},
		{"ada", "bob", keys["bob"], 200},
		{"bob", "carol", keys["bob"], 403},
	} {
		if got := post(tc.port, tc.agent, tc.key); got != tc.want {
			t.Errorf("on %s's port, naming %s with %s's key: %d, want %d", tc.port, tc.agent, tc.key, got, tc.want)
		}
	}
	for name, n := range map[string]int{"ada": 2, "bob": 4} {
		b, _ := os.ReadFile(filepath.Join(dir, name, "chats", "t", "events.jsonl"))
		if got := strings.Count(string(b), "\n"); got != n {
			t.Errorf("%s holds %d events, want %d", name, got, n)
		}
	}
}

// A turn that hangs on the model past --grace is ended after a SIGTERM:
// its caller told 503, the process gone within the grace and a margin, and
// the conversation, taken up by the next process, answers the next
// message.
func TestGraceEndsHangingTurn(t *testing.T) {
	const grace = 500 * time.Millisecond
	h := startHarness(t, `
[[rule]]
match = "hello"
text = "hi"

[[rule]]
match = "hang"
text = "never said"
stall = true
ping_ms = 50 # a proxy's keep-alives: bytes, never an answer
`, true, "--grace", grace.String())
	res := make(chan error, 1)
	go func() {
		_, err := h.message("t", "m1", "hang on")
		res <- err
	}()
	<-h.asked // the message is with the model
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.stopsWithin(t, grace+10*time.Second) // its grace, and a margin
	if err := <-res; err == nil || !strings.Contains(err.Error(), ": 503 ") {
		t.Errorf("the ended turn's caller: %v, want a 503", err)
	}
	if !strings.Contains(h.log.String(), "grace over") {
		t.Errorf("the log does not say the grace was over:\n%s", h.log)
	}

	h.restart(t)
	s, err := h.message("t", "m2", "hello again")
	if err != nil || s.said != "hi" {
		t.Fatalf("the next message: %+v, %v", s, err)
	}
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.cmd.Wait()
}

// TestStopOnceListening stops the harness the moment it says where it
// listens, as a supervisor may: it stops gracefully, exit status 0, each
// time. Before the signals were caught ahead of that line, a SIGTERM in
// the gap ended the process at once ("signal: terminated").
func TestStopOnceListening(t *testing.T) {
	h := startHarness(t, "", false)
	for i := range 5 {
		if i > 0 {
			h.restart(t)
		}
		h.cmd.Process.Signal(syscall.SIGTERM)
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("stop %d: exit: %v\n%s", i, err, h.log)
		}
		if !strings.Contains(h.log.String(), `"msg":"stopped"`) {
			t.Fatalf("stop %d: no stopped line:\n%s", i, h.log)
		}
	}
}
