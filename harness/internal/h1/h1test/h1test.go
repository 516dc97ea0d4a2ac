package h1test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Answer answers request n (counted from 0 over every connection), read
// whole with its body, by writing on c; false closes c without a word.
type Answer func(n int, c net.Conn, req *http.Request, body []byte) bool

// Serve listens on a free loopback port and answers each request with
// answer until the test ends, when it closes the listener and every
// connection and waits for their goroutines.
func Serve(t testing.TB, answer Answer) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		n     int
		conns []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	next := func() int {
		mu.Lock()
		defer mu.Unlock()
		n++
		return n - 1
	}
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil || !answer(next(), c, req, body) {
						return
					}
				}
			})
		}
	})
	return l
}
