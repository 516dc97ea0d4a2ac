package h1

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
)

// BenchmarkCall is one model-like call: a POST of 2 KB and an answer of
// about 4 KB streamed as 8 events, each flushed (serveCall), through
// Transport and through net/http's, against a server in a process of its
// own (server=child, as a model proxy is: what is measured is the
// client's alone) and in this process (server=process). cpu-ns/op is this
// process's CPU time a call: on a machine whose cores are shared, the
// wall time a call takes says as much of its neighbours as of it.
//
//	go test -run '^$' -bench Call -count 10 ./harness/internal/h1 | go tool benchstat -col /transport -
func BenchmarkCall(b *testing.B) {
	inProcess := httptest.NewServer(http.HandlerFunc(serveCall))
	defer inProcess.Close()
	servers := map[string]string{"process": inProcess.URL, "child": childServer(b)}
	body := bytes.Repeat([]byte("y"), 2<<10)
	for _, server := range []string{"child", "process"} {
		for _, c := range []struct {
			name string
			rt   http.RoundTripper
		}{
			{"h1", &Transport{}},
			{"net-http", &http.Transport{}},
		} {
			b.Run("server="+server+"/transport="+c.name, func(b *testing.B) {
				hc := &http.Client{Transport: c.rt}
				defer hc.CloseIdleConnections()
				b.ReportAllocs()
				start := cpuTime(b)
				for b.Loop() {
					post(b, hc, servers[server], body)
				}
				b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the process's CPU time so far, user and system, in
// nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
