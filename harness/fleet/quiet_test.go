package fleet

import (
	"math"
	"runtime/debug"
	"testing"
)

// The collector is quiet only while every agent sleeps, with a memory
// limit over what the process holds, and given back as it was.
func TestQuietGC(t *testing.T) {
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)

	var q quietGC
	q.start(func() bool { return false })
	if q.on || debug.SetMemoryLimit(-1) != limit {
		t.Fatal("an agent awake, the collector was quieted")
	}
	q.start(func() bool { return true })
	p := debug.SetGCPercent(-1)
	l := debug.SetMemoryLimit(-1)
	if !q.on || p != -1 || l == math.MaxInt64 || l <= 0 {
		t.Errorf("quiet: GOGC %d, memory limit %d; want off, and a limit", p, l)
	}
	q.stop()
	if p, l := debug.SetGCPercent(percent), debug.SetMemoryLimit(-1); q.on || p != percent || l != limit {
		t.Errorf("after: GOGC %d, limit %d; want %d, %d", p, l, percent, limit)
	}
}
