package proc

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Sample is what /proc says of one process at one moment.
type Sample struct {
	Time time.Time

	// CPUNanos is the CPU time of all the process's threads, those ended
	// too, from its CPU-time clock (clock_gettime of the process's clock
	// id): nanoseconds, and brought up to date for a thread running now.
	// CPUTicks is utime+stime from stat, the same time in clock ticks, kept
	// for a kernel that refuses the clock (CPUNanos is then 0).
	CPUNanos uint64
	CPUTicks uint64

	RSS  uint64 // resident bytes
	PSS  uint64 // proportional bytes, from smaps_rollup
	Anon uint64 // resident bytes backed by no file, from smaps_rollup
	FDs  int    // open descriptors, with memory

	// From /proc/PID/io: bytes passed to read and write calls of any kind
	// (files, sockets, pipes), and bytes the storage layer fetched and was
	// sent.
	RChar, WChar          uint64
	ReadBytes, WriteBytes uint64
}

// ticksPerSecond is USER_HZ, the unit of utime and stime; it is 100 on every
// Linux this runs on.
const ticksPerSecond = 100

// Read reads the process pid from /proc. Memory is read only with
// memory set, since smaps_rollup walks every mapping.
func Read(pid int, memory bool) (Sample, error) {
	s := Sample{Time: time.Now()}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return s, fmt.Errorf("proc: process %d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return s, fmt.Errorf("proc: stat of process %d: %w", pid, err)
	}
	s.CPUTicks = uint64(st.UTime + st.STime)
	s.RSS = uint64(st.ResidentMemory())
	var ts unix.Timespec
	if unix.ClockGettime(processClock(pid), &ts) == nil {
		s.CPUNanos = uint64(ts.Nano())
	}
	io, err := p.IO()
	if err != nil {
		return s, fmt.Errorf("proc: io of process %d: %w", pid, err)
	}
	s.RChar, s.WChar, s.ReadBytes, s.WriteBytes = io.RChar, io.WChar, io.ReadBytes, io.WriteBytes
	if memory {
		r, err := p.ProcSMapsRollup()
		if err != nil {
			return s, fmt.Errorf("proc: smaps_rollup of process %d: %w", pid, err)
		}
		s.RSS, s.PSS, s.Anon = r.Rss, r.Pss, r.Anonymous
		if s.FDs, err = p.FileDescriptorsLen(); err != nil {
			return s, fmt.Errorf("proc: descriptors of process %d: %w", pid, err)
		}
	}
	return s, nil
}

// processClock is the clock id of pid's CPU time, as glibc's
// clock_getcpuclockid makes it: the pid's complement shifted past the
// clock's kind, CPUCLOCK_SCHED (2), for the whole process.
func processClock(pid int) int32 {
	return int32(^pid<<3 | 2)
}

// CPUSeconds returns the CPU time from a to b, from the process's clock
// when both samples read it, else from the ticks.
func CPUSeconds(a, b Sample) float64 {
	if a.CPUNanos == 0 || b.CPUNanos == 0 {
		return float64(sub(b.CPUTicks, a.CPUTicks)) / ticksPerSecond
	}
	return float64(sub(b.CPUNanos, a.CPUNanos)) / 1e9
}

// sub is b-a for counters that only grow, and 0 if one went back.
func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}
