package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

const key = "k-0123456789abcdef0123456789abcdef"

// fixture is one agent served over real HTTP, its model the scripted model
// on its own listener.
type fixture struct {
	home  string
	url   string
	model *scripted.Server
	asked chan struct{} // a send for each request to the model, as it comes
	srv   *Server
}

func newFixture(t testing.TB, script *scripted.Script, setup ...func(*turn.Runner)) *fixture {
	t.Helper()
	model := scripted.New(script)
	asked := make(chan struct{}, 64)
	ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		model.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { model.Close(); ms.Close() })
	r := runnerOf(t, "ada", ms.URL, &http.Client{})
	for _, f := range setup {
		f(r)
	}
	srv, err := New(Options{Log: r.Log}, Agent{Runner: r, Key: key}) // the server logs where its runner does
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Wait() })
	return &fixture{home: r.Agent.Dir, url: hs.URL, model: model, asked: asked, srv: srv}
}

// runnerOf is a runner of the agent name, in a home of its own, asking
// the model proxy at modelURL through hc, its conversations kept as logs.
func runnerOf(t testing.TB, name, modelURL string, hc *http.Client) *turn.Runner {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LNK_MODEL_PROXY": modelURL}
	return &turn.Runner{Agent: home.Agent{Name: name, Dir: dir}, Getenv: func(k string) string { return env[k] }, HTTP: hc, Open: openLog}
}

// request is a request to url, with key (no Authorization when it is "")
// and the headers hdr, a name and a value each (one of no value left out).
func request(t *testing.T, method, url, key, body string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] != "" {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return req
}

// exchange sends the request request makes and returns the answer, its
// body read whole, and closed.
func exchange(t *testing.T, method, url, key, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(request(t, method, url, key, body, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: the body: %v", method, url, err)
	}
	return resp, string(b)
}

func (f *fixture) post(t *testing.T, path, key, body string, hdr ...string) (int, string) {
	t.Helper()
	resp, b := exchange(t, http.MethodPost, f.url+path, key, body, hdr...)
	return resp.StatusCode, b
}

// said sends thread each of bodies as a message, in turn, and wants each
// answered 200.
func (f *fixture) said(t *testing.T, thread string, bodies ...string) {
	t.Helper()
	for _, body := range bodies {
		if code, said := f.post(t, "/v1/agents/ada/chats/"+thread+"/messages", key, body); code != 200 {
			t.Fatalf("%s: %d %s", body, code, said)
		}
	}
}

// kept appends events to the log of thread, a plain name its folder
// bears, as a process of the home does, this server not told: what a
// process that died left.
func (f *fixture) kept(t *testing.T, thread string, events ...event.Event) {
	t.Helper()
	dir := filepath.Join(f.home, "chats", thread)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	conv, err := eventlog.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	for _, e := range events {
		if err := conv.Append(context.Background(), e.Seq, event.Append(nil, &e)); err != nil {
			t.Fatal(err)
		}
	}
}

// readSSE reads server-sent events from r to its end, calling each with
// every event's name and data in the order they came.
func readSSE(r io.Reader, each func(name, data string)) {
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		} else if d, ok := strings.CutPrefix(line, "data: "); ok {
			each(name, d)
		}
	}
}

// tree lists every file under dir with its size, to see that nothing was
// written.
func tree(t *testing.T, dir string) string {
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		lines = append(lines, fmt.Sprintf("%s %d", p, fi.Size()))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestMessage(t *testing.T) {
	f := newFixture(t, nil)
	code, body := f.post(t, "/v1/agents/ada/chats/telegram:42/messages", key,
		`{"id":"m1","text":"hello there","from":{"id":"u1","name":"Ada"},"owner":true,"connection":"telegram"}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var a answerBody
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	if a.Thread != "telegram:42" || a.Seq != 2 || a.Text == "" {
		t.Fatalf("answer %+v", a)
	}
	// The same message id again is the same message: answered once.
	code, body = f.post(t, "/v1/agents/ada/chats/telegram:42/messages", key,
		`{"id":"m1","text":"hello there","from":{"id":"u1","name":"Ada"},"owner":true,"connection":"telegram"}`)
	var again answerBody
	json.Unmarshal([]byte(body), &again)
	if code != 200 || again.Seq != 2 || again.Text != a.Text || !again.Repeat {
		t.Fatalf("repeat: %d %s", code, body)
	}
	events, err := os.ReadFile(filepath.Join(f.home, chatFile("telegram:42", "events.jsonl")))
	if err != nil || strings.Count(string(events), "\n") != 2 {
		t.Fatalf("events: %s %v", events, err)
	}
	if !strings.Contains(string(events), `"thread":"telegram:42"`) {
		t.Errorf("the first event does not keep the whole thread name: %s", events)
	}
	copy, err := os.ReadFile(filepath.Join(f.home, chatFile("telegram:42", "chat.md")))
	if err != nil || !strings.Contains(string(copy), "hello there") || !strings.Contains(string(copy), a.Text) {
		t.Fatalf("copy: %q %v", copy, err)
	}
	// A thread whose name the rule before made the same folder of has its
	// own.
	code, body = f.post(t, "/v1/agents/ada/chats/telegram-42/messages", key, `{"text":"hi"}`)
	if code != 200 || !strings.Contains(body, `"thread":"telegram-42","seq":2`) {
		t.Errorf("telegram-42 after telegram:42: %d %s", code, body)
	}
	events, err = os.ReadFile(filepath.Join(f.home, "chats", "telegram-42", "events.jsonl"))
	if err != nil || strings.Count(string(events), "\n") != 2 || !strings.Contains(string(events), `"thread":"telegram-42"`) {
		t.Errorf("telegram-42's events: %s %v", events, err)
	}
}

func TestMessageStream(t *testing.T) {
	f := newFixture(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "one two three four", Chunks: 4}}})
	resp, err := http.DefaultClient.Do(request(t, http.MethodPost, f.url+"/v1/agents/ada/chats/t1/messages", key, `{"text":"go"}`, "Accept", "text/event-stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var deltas []string
	var done string
	readSSE(resp.Body, func(ev, data string) {
		switch ev {
		case "delta":
			var d struct{ Text string }
			json.Unmarshal([]byte(data), &d)
			deltas = append(deltas, d.Text)
		case "done":
			done = data
		}
	})
	if strings.Join(deltas, "") != "one two three four" || len(deltas) < 2 {
		t.Errorf("deltas %q", deltas)
	}
	if !strings.Contains(done, `"text":"one two three four"`) {
		t.Errorf("done %s", done)
	}
}

// Bad input gets a clear 4xx JSON error and writes nothing.
func TestBadInput(t *testing.T) {
	f := newFixture(t, nil)
	before := tree(t, f.home)
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		name, path, key, body string
		code                  int
		says                  string
	}{
		{"malformed JSON", "/v1/agents/ada/chats/t/messages", key, `{"text":`, 400, "body"},
		{"not an object", "/v1/agents/ada/chats/t/messages", key, `["hi"]`, 400, "body"},
		{"an unknown field", "/v1/agents/ada/chats/t/messages", key, `{"txt":"hi"}`, 400, "txt"},
		{"a missing text", "/v1/agents/ada/chats/t/messages", key, `{"id":"1"}`, 400, "no text"},
		{"an empty text", "/v1/agents/ada/chats/t/messages", key, `{"text":"  "}`, 400, "no text"},
		{"a body over the limit", "/v1/agents/ada/chats/t/messages", key, `{"text":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, 413, "over"},
		{"a text over the limit", "/v1/agents/ada/chats/t/messages", key, `{"text":"` + strings.Repeat("x", turn.MaxTextBytes+1) + `"}`, 400, "text of"},
		{"thread ../x", "/v1/agents/ada/chats/..%2Fx/messages", key, `{"text":"hi"}`, 400, "thread"},
		{"thread ..", "/v1/agents/ada/chats/%2E%2E/messages", key, `{"text":"hi"}`, 400, "thread"},
		{"an empty thread", "/v1/agents/ada/chats//messages", key, `{"text":"hi"}`, 400, "empty thread"},
		{"a 300-byte thread", "/v1/agents/ada/chats/" + long + "/messages", key, `{"text":"hi"}`, 400, "300 bytes"},
		{"a wrong key", "/v1/agents/ada/chats/t/messages", key + "x", `{"text":"hi"}`, 401, "wrong key"},
		{"no key", "/v1/agents/ada/chats/t/messages", "", `{"text":"hi"}`, 401, "no bearer key"},
		{"another agent", "/v1/agents/bob/chats/t/messages", key, `{"text":"hi"}`, 403, "not served"},
		{"no such path", "/v1/agents/ada/chats/t/messages/x", key, `{"text":"hi"}`, 404, "no such path"},
	} {
		code, body := f.post(t, tc.path, tc.key, tc.body)
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
			t.Errorf("%s: body %q is not a JSON error", tc.name, body)
		}
		if code != tc.code || !strings.Contains(e.Error, tc.says) {
			t.Errorf("%s: %d %q; want %d saying %q", tc.name, code, e.Error, tc.code, tc.says)
		}
	}
	if resp, _ := exchange(t, http.MethodGet, f.url+"/v1/agents/ada/chats/t/messages", key, ""); resp.StatusCode != 405 {
		t.Errorf("GET messages: %d", resp.StatusCode)
	}
	if after := tree(t, f.home); after != before {
		t.Errorf("bad input wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
	if n := len(f.model.Requests()); n != 0 {
		t.Errorf("bad input reached the model %d times", n)
	}
}

func TestChatAndMetrics(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 3 {
		f.said(t, "t", fmt.Sprintf(`{"text":"message %d","from":{"name":"Ada"},"owner":true}`, i))
	}
	get := func(path, accept string) (int, string, string) {
		resp, body := exchange(t, http.MethodGet, f.url+path, key, "", "Accept", accept)
		return resp.StatusCode, resp.Header.Get("Content-Type"), body
	}
	code, ct, body := get("/v1/agents/ada/chats/t", "")
	if code != 200 || !strings.HasPrefix(ct, "text/markdown") || strings.Count(body, "message ") != 3 {
		t.Errorf("copy: %d %s %q", code, ct, body)
	}
	code, ct, body = get("/v1/agents/ada/chats/t", "application/jsonl")
	if code != 200 || ct != "application/jsonl" || strings.Count(body, "\n") != 6 {
		t.Errorf("events: %d %s %q", code, ct, body)
	}
	if code, _, _ = get("/v1/agents/ada/chats/nothing", ""); code != 404 {
		t.Errorf("a missing conversation: %d", code)
	}
	_, _, body = get("/metrics", "")
	for _, want := range []string{`lnk_turns_total{agent="ada",outcome="ok"} 3`, `lnk_turns_total{agent="ada",outcome="error"} 0`, `lnk_turn_seconds_count{outcome="ok"} 3`, `lnk_turns_in_flight 0`, `lnk_recover_waiting{agent="ada"} 0`, "go_heap_allocs_objects_total "} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

// A caller that leaves does not stop its turn: the answer is appended and
// kept for _link/recover, which hands it over once.
func TestCallerLeaves(t *testing.T) {
	// A slow model: the caller leaves while it answers.
	f := newFixture(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "late answer", LatencyMS: 600}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := request(t, http.MethodPost, f.url+"/v1/agents/ada/chats/t/messages", key, `{"text":"hi"}`).WithContext(ctx)
	go func() {
		<-f.asked // the turn is with the model: the caller leaves
		cancel()
	}()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the caller was answered before it left")
	}
	recover := func() []pendingAnswer {
		_, body := exchange(t, http.MethodGet, f.url+"/_link/recover", key, "")
		var out []pendingAnswer
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	f.srv.Wait() // the turn ended, its answer kept
	got := recover()
	if len(got) != 1 || got[0] != (pendingAnswer{Agent: "ada", Thread: "t", Seq: 2, Text: "late answer"}) {
		t.Fatalf("recover: %+v", got)
	}
	if again := recover(); len(again) != 0 {
		t.Fatalf("handed over twice: %+v", again)
	}
	if n := f.operations(t, "ada", "hand_over"); n != 1 {
		t.Errorf("hand-overs counted %v, want 1", n)
	}
	events, _ := os.ReadFile(filepath.Join(f.home, "chats", "t", "events.jsonl"))
	if !strings.Contains(string(events), "late answer") {
		t.Fatalf("the answer is not in the conversation: %s", events)
	}
	if resp, _ := exchange(t, http.MethodGet, f.url+"/_link/recover", "wrong", ""); resp.StatusCode != 401 {
		t.Errorf("recover with a wrong key: %d", resp.StatusCode)
	}
}

// An idle agent holds no goroutine of its own: once its turns end and the
// process has been idle for IdleFree, the model proxy's connections are
// closed and nothing of a turn is left.
func TestIdleHoldsNothing(t *testing.T) {
	f := newFixture(t, nil)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	send := func(i int) {
		resp, err := client.Do(request(t, http.MethodPost, f.url+"/v1/agents/ada/chats/t/messages", key, fmt.Sprintf(`{"text":"m%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// settle waits until at most want goroutines run, and returns how
	// many do: the turns' goroutines end with the turns, their
	// connections' soon after. It yields between looks; the deadline only
	// bounds a failure, never makes a pass.
	settle := func(want int) int {
		f.srv.Wait()
		f.srv.release() // as the idle timer does
		n := runtime.NumGoroutine()
		for deadline := time.Now().Add(10 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
			runtime.Gosched()
		}
		return n
	}
	before := runtime.NumGoroutine()
	for i := 1; i <= 5; i++ {
		send(i)
	}
	if after := settle(before); after > before {
		t.Errorf("%d goroutines after five turns, %d before", after, before)
	}
}

// openLog keeps the tests' conversations as logs: the programs wire the
// other ways.
// chatFile is the path, under an agent's home, of file in the folder of
// thread (home.ThreadDir).
func chatFile(thread, file string) string {
	dir, err := home.ThreadDir(thread)
	if err != nil {
		panic(err)
	}
	return filepath.Join("chats", dir, file)
}

func openLog(dir, _ string) (store.Conversation, error) { return eventlog.Open(dir) }
