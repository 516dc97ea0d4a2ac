package server

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/turn"
)

// idleServer is a server of one agent with no model, whose FreeMemory is
// free; its turns are begun and ended by hand.
func idleServer(t *testing.T, free func()) *Server {
	t.Helper()
	r := &turn.Runner{Agent: home.Agent{Name: "ada", Dir: t.TempDir()}, Open: openLog}
	s, err := New(Options{FreeMemory: free, IdleFree: time.Second}, Agent{Runner: r, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// burst begins n turns and ends them.
func burst(s *Server, n int) {
	s.active.Add(int64(n))
	for range n {
		s.idle()
	}
}

// Memory is given back once no turn has run for IdleFree after a burst:
// once for the burst, not once per turn; not while a turn runs; and put
// off by a turn that began and ended meanwhile. Every sleep here is the
// idle time under test, in the bubble's fake clock: none waits on the wall.
func TestFreeAfterBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var freed atomic.Int64
		s := idleServer(t, func() { freed.Add(1) })
		burst(s, 100)
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		if n := freed.Load(); n != 0 {
			t.Fatalf("freed %d times before the process was idle for IdleFree", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := freed.Load(); n != 1 {
			t.Fatalf("freed %d times after a burst of 100 turns, want once", n)
		}

		burst(s, 1)
		time.Sleep(time.Second / 2)
		burst(s, 1) // a turn meanwhile puts it off
		time.Sleep(time.Second / 2)
		synctest.Wait()
		if n := freed.Load(); n != 1 {
			t.Fatalf("freed %d times, want it put off by the turn meanwhile", n)
		}
		s.active.Add(1) // a turn runs when the time comes: nothing freed under it
		time.Sleep(time.Second)
		synctest.Wait()
		if n := freed.Load(); n != 1 {
			t.Fatalf("freed again while a turn runs (%d times in all)", n)
		}
		s.idle()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := freed.Load(); n != 2 {
			t.Fatalf("freed %d times, want a second time after the last turn's end", n)
		}
	})
}

// With debug.FreeOSMemory, as main passes it, the heap a burst freed is
// released to the system once the process is idle: the runtime's count of
// released heap grows by most of what the burst left. The sleep is the
// idle time, in the bubble's fake clock.
func TestFreeReleasesHeap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := idleServer(t, debug.FreeOSMemory)
		const size = 64 << 20
		garbage(size)
		before := released()
		burst(s, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := released() - before; got < size/2 {
			t.Errorf("released %d MiB more after the idle hook, want at least %d MiB of the %d MiB freed", got>>20, size>>21, size>>20)
		}
	})
}

// garbage makes size bytes of heap, in MiB pieces, and lets them go.
func garbage(size int) {
	keep := make([][]byte, 0, size>>20)
	for range size >> 20 {
		b := make([]byte, 1<<20)
		b[0] = 1
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
}

// released is the heap the runtime has given back to the system, in bytes.
func released() int64 {
	m := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return int64(m[0].Value.Uint64())
}
