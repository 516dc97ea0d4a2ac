package httpconn

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"
)

// servers are the two servers the benchmarks compare: this package's and
// net/http's, each on a listener of 127.0.0.1, its address given.
var servers = []struct {
	name  string
	start func(testing.TB, http.Handler) string
}{
	{"httpconn", func(tb testing.TB, h http.Handler) string { return serve(tb, &Server{Handler: h}) }},
	{"net-http", func(tb testing.TB, h http.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		hs := &http.Server{Handler: h}
		go hs.Serve(ln)
		tb.Cleanup(func() { hs.Close() })
		return ln.Addr().String()
	}},
}

// message is a small POST, as an agent's caller sends one.
var message = []byte("POST /message HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"text\":\"hey\"}\n")

// rawDial connects to addr with no deadline, closed when the benchmark
// ends.
func rawDial(b *testing.B, addr string) net.Conn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return nc
}

// BenchmarkKept is one small POST and its answer on a kept connection,
// the client writing bytes made once and reading into a buffer of its own.
//
//	go test -run '^$' -bench Kept -count 10 ./harness/internal/httpconn | go tool benchstat -col /server -
func BenchmarkKept(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	})
	for _, s := range servers {
		b.Run("server="+s.name, func(b *testing.B) {
			nc := rawDial(b, s.start(b, h))
			buf := make([]byte, 1<<10)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := nc.Write(message); err != nil {
					b.Fatal(err)
				}
				if _, err := readAnswer(nc, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWaiting holds waiting requests in flight at once, each handler
// blocked after reading its body as a message waits on its turn, and
// reports what each costs the process while it waits: heap and stacks in
// use (B/waiting, the client's side of each connection in it too) and
// goroutines (goroutines/waiting).
func BenchmarkWaiting(b *testing.B) {
	const waiting = 200
	in := make(chan struct{}, waiting)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		in <- struct{}{}
		<-release
		io.WriteString(w, `{"ok":true}`)
	})
	for _, s := range servers {
		b.Run("server="+s.name, func(b *testing.B) {
			buf := make([]byte, 1<<10)
			each(b, s.start(b, h), waiting, "waiting", func([]net.Conn) {
				for range waiting {
					<-in
				}
			}, func(conns []net.Conn) {
				for range waiting {
					release <- struct{}{}
				}
				for _, nc := range conns {
					if _, err := readAnswer(nc, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkIdle holds kept connections idle at once, each after one
// request and its answer, as a caller that keeps its connection between
// messages, and reports what each costs the process while idle: heap and
// stacks in use once collected (B/idle, the client's side in it too) and
// goroutines (goroutines/idle).
func BenchmarkIdle(b *testing.B) {
	const idle = 200
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	})
	for _, s := range servers {
		b.Run("server="+s.name, func(b *testing.B) {
			buf := make([]byte, 1<<10)
			each(b, s.start(b, h), idle, "idle", func(conns []net.Conn) {
				for _, nc := range conns {
					if _, err := readAnswer(nc, buf); err != nil {
						b.Fatal(err)
					}
				}
			}, func([]net.Conn) {})
		})
	}
}

// each dials n connections to addr at each of b's iterations and sends
// each the message; once held says the server holds them as the
// benchmark means, what the process holds more is reported a connection,
// as "B/"+unit and "goroutines/"+unit, and let go of them (the
// connections are closed after it).
func each(b *testing.B, addr string, n int, unit string, held, let func([]net.Conn)) {
	conns := make([]net.Conn, n)
	var grown, goroutines float64
	b.ReportAllocs()
	for b.Loop() {
		before, g := inUse()
		for i := range conns {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := nc.Write(message); err != nil {
				b.Fatal(err)
			}
			conns[i] = nc
		}
		held(conns)
		after, g1 := inUse()
		grown += float64(after - before)
		goroutines += float64(g1 - g)
		let(conns)
		for _, nc := range conns {
			nc.Close()
		}
	}
	b.ReportMetric(grown/float64(b.N*n), "B/"+unit)
	b.ReportMetric(goroutines/float64(b.N*n), "goroutines/"+unit)
}

// inUse is the heap and stacks in use once what is unreachable is freed
// (pools' too: a pool's buffers outlive one collection), and the
// goroutines.
func inUse() (int64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse), runtime.NumGoroutine()
}
