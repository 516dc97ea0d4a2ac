package server

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"lnk.dev/linkharness/loadgen/scripted"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// dialFixture serves agents, sharing one model client as main builds it,
// with a scripted model whose listener counts the connections made to it.
func dialFixture(t *testing.T, agents ...string) (*Server, *countingListener, string) {
	srv, model, base, _ := dialFixtureIn(t, agents...)
	return srv, model, base
}

// dialFixtureIn is dialFixture with the server's own listener counting
// the connections its callers make.
func dialFixtureIn(t *testing.T, agents ...string) (*Server, *countingListener, string, *countingListener) {
	t.Helper()
	model := scripted.New(nil)
	ms := httptest.NewUnstartedServer(model)
	counted := &countingListener{Listener: ms.Listener}
	ms.Listener = counted
	ms.Start()
	t.Cleanup(func() { model.Close(); ms.Close() })
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
	t.Cleanup(hc.CloseIdleConnections)
	var served []Agent
	for _, name := range agents {
		served = append(served, Agent{Runner: runnerOf(t, name, ms.URL, hc), Key: key + name})
	}
	srv, err := New(Options{}, served...)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	in := &countingListener{Listener: hs.Listener}
	hs.Listener = in
	hs.Start()
	t.Cleanup(func() { hs.Close(); srv.Wait() })
	return srv, counted, hs.URL, in
}

// sendAs posts one message to agent's thread and wants it answered.
func sendAs(t *testing.T, base, agent, text string) {
	t.Helper()
	resp, _ := exchange(t, http.MethodPost, base+"/v1/agents/"+agent+"/chats/t/messages", key+agent, fmt.Sprintf(`{"text":%q}`, text))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("message %q to %s: status %d", text, agent, resp.StatusCode)
	}
}

// Turns one after another, of one agent or of several sharing the
// process's model client, take one connection to the model proxy and use
// it again, rather than dialing for each; once the process has been idle
// for IdleFree, that connection is closed, and the next turn dials anew.
func TestModelConnectionKept(t *testing.T) {
	for _, agents := range [][]string{{"ada"}, {"ada", "bob", "cy"}} {
		t.Run(fmt.Sprintf("agents=%d", len(agents)), func(t *testing.T) {
			srv, model, base := dialFixture(t, agents...)
			const turns = 12
			for i := range turns {
				sendAs(t, base, agents[i%len(agents)], fmt.Sprintf("m%d", i))
			}
			if n := model.accepted.Load(); n != 1 {
				t.Errorf("%d connections to the model for %d turns one after another, want 1 used again", n, turns)
			}
			srv.Wait()
			srv.release() // as the idle timer does
			sendAs(t, base, agents[0], "after a pause")
			if n := model.accepted.Load(); n != 2 {
				t.Errorf("%d connections to the model after the idle process closed its own, want 2", n)
			}
		})
	}
}

// A caller that keeps its connection sends message after message over it:
// the server reads each body to its end and answers without closing, so
// one connection carries them all, as lnk loadgen and lnk measure send.
func TestCallerConnectionKept(t *testing.T) {
	_, _, base, in := dialFixtureIn(t, "ada", "bob")
	for i := range 10 {
		sendAs(t, base, []string{"ada", "bob"}[i%2], fmt.Sprintf("m%d", i))
	}
	if n := in.accepted.Load(); n != 1 {
		t.Errorf("%d connections from one caller for 10 messages, want 1 kept", n)
	}
}
