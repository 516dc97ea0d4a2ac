package server

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// Turns one after another run on one goroutine, kept between them; at
// once, on as many; rest ends every waiting one, and the crew keeps no
// more than maxIdle waiting.
func TestCrew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c crew
		base := 0 // the crew's goroutines are counted by their stacks, whatever else runs
		ran := make(chan int)
		for i := range 5 {
			c.run(func() { ran <- i })
			<-ran
			synctest.Wait()
			if n := crewGoroutines() - base; n != 1 {
				t.Fatalf("after turn %d one after another: %d goroutines, want 1", i, n)
			}
		}
		const at = maxIdle + 6
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for range at {
			wg.Add(1)
			c.run(func() { wg.Done(); <-gate })
		}
		wg.Wait()
		if n := crewGoroutines() - base; n != at {
			t.Fatalf("%d turns at once: %d goroutines", at, n)
		}
		close(gate)
		synctest.Wait()
		if n := crewGoroutines() - base; n != maxIdle {
			t.Fatalf("after %d turns at once: %d goroutines wait, want %d", at, n, maxIdle)
		}
		c.rest()
		synctest.Wait()
		if n := crewGoroutines() - base; n != 0 {
			t.Fatalf("rested: %d goroutines left", n)
		}
		c.run(func() { ran <- 0 }) // and a turn after runs
		<-ran
		synctest.Wait() // its goroutine waiting again
		c.rest()
	})
}

// crewGoroutines counts the goroutines a crew runs, by their stacks: other
// tests' goroutines (a server's release timer firing) come and go beside
// them.
func crewGoroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "server.(*crew).work(")
}
