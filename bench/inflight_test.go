package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/stats"
)

// inFlight is how many messages BenchmarkInFlight keeps in flight, as
// `lnk loadgen`'s default concurrency does.
const inFlight = 50

// BenchmarkInFlight is the latency a server adds with 50 messages in
// flight, each caller continuing a conversation of its own on a kept
// connection, the scripted model answering at once: the floor
// (bench/floor) and Link Harness, one after the other in the same run.
// The callers and the model share the machine's cores with the server, so
// on a machine of few cores what a message waits is mostly its place in
// line (Little's law: in flight over throughput), the floor's as well as
// the harness's. p50-ms, p99-ms and msgs/s are the figures, over b.N
// messages after each caller's warm-up; cpu-ms/msg the server's CPU.
//
//	go test -run '^$' -bench InFlight -benchtime 2000x -count 5 ./bench
func BenchmarkInFlight(b *testing.B) {
	for _, s := range servers(b) {
		b.Run("server="+s.name, func(b *testing.B) { inFlightLoad(b, s.program) })
	}
}

// inFlightLoad sends program's one agent b.N messages from inFlight
// callers at once and reports the quantiles of what each waited.
func inFlightLoad(b *testing.B, program string) {
	s := serveWindow(b, program, 0, false)
	ctx := context.Background()
	send := func(caller, i int) (time.Duration, error) {
		m := drive.Message{ID: fmt.Sprintf("c%d-%d", caller, i), Text: fmt.Sprintf("message %d: how are you today?", i)}
		start := time.Now()
		r, err := s.unit.Send(ctx, "ada", fmt.Sprintf("caller-%d", caller), m)
		took := time.Since(start)
		if err == nil && r.Text == "" {
			err = fmt.Errorf("message %s: an empty answer", m.ID)
		}
		return took, err
	}
	// run sends n messages from inFlight callers at once, caller c the
	// c-th of every inFlight, and keeps each one's wait in took.
	run := func(n int, took []float64) error {
		var wg sync.WaitGroup
		errs := make([]error, inFlight)
		for c := range inFlight {
			wg.Go(func() {
				for i := c; i < n; i += inFlight {
					d, err := send(c, i)
					if err != nil {
						errs[c] = err
						return
					}
					if took != nil {
						took[i] = float64(d) / 1e6
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	// Each caller's conversation begun and warm before the clock starts.
	if err := run(inFlight*warmup, nil); err != nil {
		b.Fatal(err)
	}
	took := make([]float64, b.N)
	b.ReportAllocs()
	measureCPU(b, s, func() {
		if err := run(b.N, took); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(stats.Quantile(took, 0.5), "p50-ms")
	b.ReportMetric(stats.Quantile(took, 0.99), "p99-ms")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
