package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/turn"
)

// Every way the model fails a turn is one status, 502 Bad Gateway, and the
// body says neither the home's path nor the model proxy's address.
func TestModelFailuresAre502(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
	}{
		{"a status", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"type":"error","error":{"type":"api_error","message":"boom"}}`, http.StatusInternalServerError)
		}},
		{"a cut stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n"))
			w.(http.Flusher).Flush()
			closeConn(w, false)
		}},
		{"a reset", func(w http.ResponseWriter, r *http.Request) {
			closeConn(w, true)
		}},
		{"a reset mid-stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n"))
			w.(http.Flusher).Flush()
			closeConn(w, true)
		}},
		{"garbage", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {not json\n\n"))
		}},
		{"a stall", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := httptest.NewServer(http.HandlerFunc(tc.serve))
			t.Cleanup(ms.Close)
			env := map[string]string{"LNK_MODEL_PROXY": ms.URL, "LNK_MODEL_STALL": "50ms"}
			f := newFixture(t, nil, func(r *turn.Runner) { r.Getenv = func(k string) string { return env[k] } })
			code, body := f.post(t, "/v1/agents/ada/chats/t/messages", key, `{"id":"m1","text":"hello"}`)
			if code != http.StatusBadGateway {
				t.Errorf("%d %s, want 502", code, body)
			}
			for _, leak := range []string{f.home, ms.URL, strings.TrimPrefix(ms.URL, "http://")} {
				if strings.Contains(body, leak) {
					t.Errorf("the body says %q: %s", leak, body)
				}
			}
		})
	}
}

// closeConn closes the request's connection, at once with a reset (RST)
// when reset is set.
func closeConn(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}
