package model

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/internal/h1/h1test"
	"lnk.dev/linkharness/loadgen/scripted"
)

// A request's body goes back once written, so a request sent again, on a
// kept connection found closed before any answer, is made again: the
// same bytes. The model proxy here is the scripted model behind a front
// that closes the first connection once it has read its second request,
// as a proxy closing an idle connection as the request came.
func TestSentAgain(t *testing.T) {
	for _, provider := range providers {
		t.Run(provider, func(t *testing.T) {
			srv, base := serve(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "hi"}}})
			front, dropped := closingFront(t, base)
			c, err := New(provider, func(k string) string { return map[string]string{"LNK_MODEL_PROXY": front}[k] }, &http.Client{Transport: &Transport{}})
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{"one", "two"} {
				req := &Request{Model: "m", Messages: []Message{{Role: "user", Text: text + strings.Repeat(" words", 2000)}}}
				if _, err := c.Call(context.Background(), req, nil); err != nil {
					t.Fatalf("%s: %v", text, err)
				}
			}
			got := lastRequest(t, srv)
			var d []byte
			select {
			case d = <-dropped:
			default:
				t.Fatal("the second request was not sent on the first connection")
			}
			if !bytes.Equal(d, got) || !bytes.Contains(got, []byte(`"two words`)) {
				t.Fatalf("the request sent again is not the one dropped:\n%.200s\n%.200s", d, got)
			}
		})
	}
}

// closingFront listens before the scripted model at base and passes each
// request on, but for the second, the first connection's, which it reads
// whole, sends on dropped and answers by closing the connection.
func closingFront(t *testing.T, base string) (string, <-chan []byte) {
	t.Helper()
	dropped := make(chan []byte, 1)
	l := h1test.Serve(t, func(n int, c net.Conn, req *http.Request, body []byte) bool {
		if n == 1 {
			dropped <- body
			return false
		}
		out, _ := http.NewRequest(req.Method, base+req.URL.RequestURI(), bytes.NewReader(body))
		out.Header = req.Header
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.Write(c) == nil
	})
	return "http://" + l.Addr().String(), dropped
}
