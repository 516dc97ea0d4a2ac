package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
)

// gate holds each request to the model whose body says "wait" until it is
// opened, telling held as each one comes.
type gate struct {
	next http.RoundTripper
	held chan struct{}
	open chan struct{}
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	if bytes.Contains(b, []byte("wait")) {
		g.held <- struct{}{}
		<-g.open
	}
	return g.next.RoundTrip(req)
}

// With one turn let run at once, a message that would begin a second is
// refused 503 with Retry-After, nothing of it written, logged and counted;
// a message to the conversation whose turn runs steers it all the same;
// once the turn ends, the refused message sent again is answered.
func TestTurnsBounded(t *testing.T) {
	g := &gate{next: http.DefaultTransport, held: make(chan struct{}, 4), open: make(chan struct{})}
	f := newFixture(t, nil, func(r *turn.Runner) {
		r.HTTP = &http.Client{Transport: g}
		r.Turns = budget.NewTurns(1)
	})
	first := f.postLater(t, "/v1/agents/ada/chats/a/messages", `{"id":"1","text":"wait for me"}`)
	<-g.held // the turn runs, its model asked

	// No turn has ended yet: told a second (see budget.RetryAfter).
	resp, body := exchange(t, http.MethodPost, f.url+"/v1/agents/ada/chats/b/messages", key, `{"id":"1","text":"hello"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "as many turns run") {
		t.Fatalf("a second turn past the bound: %s Retry-After %q %s", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	if !resp.Close {
		t.Error("the refused message's connection is kept: what it holds stays")
	}
	if _, err := os.Stat(filepath.Join(f.home, "chats", "b")); !os.IsNotExist(err) {
		t.Errorf("the refused message's conversation: %v; want nothing written\n%s", err, tree(t, f.home))
	}

	steer := f.postLater(t, "/v1/agents/ada/chats/a/messages", `{"id":"2","text":"and this"}`)
	close(g.open)
	a1, a2 := <-first, <-steer
	if a1.Seq != 2 || a2.Seq != 4 {
		t.Fatalf("the turn and the message steering it: told %+v and %+v", a1, a2)
	}
	if code, b := f.post(t, "/v1/agents/ada/chats/b/messages", key, `{"id":"1","text":"hello"}`); code != 200 || !strings.Contains(b, `"seq":2`) {
		t.Fatalf("the refused message sent again: %d %s", code, b)
	}
	mr, err := http.Get(f.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	if !strings.Contains(string(metrics), `lnk_refusals_total{agent="ada",status="503"} 1`) {
		t.Errorf("the refusal not counted:\n%s", metrics)
	}
}

// /readyz answers 200 while the process takes work; on an agent's address
// 503 while the agent's store cannot be opened, and 200 again once a turn
// opened it; everywhere 503 once the process is stopping, where a new
// message is refused 503 with Retry-After.
func TestReady(t *testing.T) {
	var down atomic.Bool
	f := newFixture(t, nil, func(r *turn.Runner) {
		r.Open = func(dir, kind string) (store.Conversation, error) {
			if down.Load() {
				return nil, errors.New("the store bridge is not answering")
			}
			return openLog(dir, kind)
		}
	})
	own := httptest.NewServer(f.srv.For("ada"))
	t.Cleanup(own.Close)
	ready := func(base string) (int, string) {
		t.Helper()
		resp, b := exchange(t, http.MethodGet, base+"/readyz", "", "")
		return resp.StatusCode, b
	}
	if code, _ := ready(own.URL); code != 200 {
		t.Fatalf("a fresh agent: /readyz %d", code)
	}
	down.Store(true)
	if code, b := f.post(t, "/v1/agents/ada/chats/a/messages", key, `{"text":"hello"}`); code != 500 {
		t.Fatalf("a message with the store down: %d %s", code, b)
	}
	if code, b := ready(own.URL); code != 503 || !strings.Contains(b, "not answering") {
		t.Fatalf("the agent's store down: /readyz %d %s", code, b)
	}
	if code, _ := ready(f.url); code != 200 {
		t.Errorf("the process's /readyz with an agent's store down: %d", code)
	}
	down.Store(false)
	if code, b := f.post(t, "/v1/agents/ada/chats/a/messages", key, `{"text":"hello"}`); code != 200 {
		t.Fatalf("a message with the store up again: %d %s", code, b)
	}
	if code, _ := ready(own.URL); code != 200 {
		t.Fatalf("the agent's store up again: /readyz %d", code)
	}
	f.srv.Stop()
	for _, base := range []string{f.url, own.URL} {
		if code, b := ready(base); code != 503 || !strings.Contains(b, "stopping") {
			t.Errorf("stopping: %s/readyz %d %s", base, code, b)
		}
	}
	resp, _ := exchange(t, http.MethodPost, f.url+"/v1/agents/ada/chats/b/messages", key, `{"text":"hi"}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a message while stopping: %s Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
}
