package h1

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkCall is one model-like call: a POST of 2 KB and an answer of
// about 4 KB streamed as 8 events, each flushed, against a server in this
// process, through Transport and through net/http's.
//
//	go test -run '^$' -bench Call -count 10 ./harness/internal/h1 | go tool benchstat -col /transport -
func BenchmarkCall(b *testing.B) {
	ev := []byte("data: " + strings.Repeat("x", 500) + "\n\n")
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for range 8 {
			w.Write(ev)
			w.(http.Flusher).Flush()
		}
	}))
	defer s.Close()
	body := bytes.Repeat([]byte("y"), 2<<10)
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"h1", &Transport{}},
		{"net-http", &http.Transport{}},
	} {
		b.Run("transport="+c.name, func(b *testing.B) {
			hc := &http.Client{Transport: c.rt}
			defer hc.CloseIdleConnections()
			b.ReportAllocs()
			for b.Loop() {
				post(b, hc, s.URL, body)
			}
		})
	}
}
