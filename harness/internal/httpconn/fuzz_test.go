package httpconn

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// Whatever bytes a caller sends, the server does not panic and the
// connection ends once the caller has said all it will: the client writes
// the input, closes its side for writing and reads until the server closes
// (a read deadline, guard, stands against a hang).
func FuzzServeConn(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /m HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"POST /m HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /m HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nHEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"POST /m HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nshort",
		"POST /m HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GET\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"\x00\xff\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	var logs syncBuffer
	addr := serve(f, &Server{
		Log:            slog.New(slog.NewTextHandler(&logs, nil)),
		MaxHeaderBytes: 1 << 10,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			w.Header().Set("X-Read", r.Method)
			if n > 2 {
				w.(http.Flusher).Flush()
			}
			io.WriteString(w, r.URL.Path)
		}),
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(guard))
		wrote := make(chan error, 1)
		go func() {
			_, err := nc.Write(in)
			nc.(*net.TCPConn).CloseWrite()
			wrote <- err
		}()
		if _, err := io.Copy(io.Discard, nc); isTimeout(err) {
			t.Fatalf("the connection still open %v after the input's end", guard)
		}
		<-wrote
		if l := logs.String(); l != "" {
			t.Fatalf("logged %s", l)
		}
	})
}
