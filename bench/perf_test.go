package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkMessageSyscallsCounted is BenchmarkMessageSyscalls counted by
// the kernel's tracepoints (perf stat), which stop no thread: strace
// stops each thread at each call, so a traced call takes tens of
// microseconds, and the runtime's monitor, which takes a processor back
// from a thread in a call past 20 µs, wakes and sleeps 20 µs at a time
// more often the more calls a message makes; here every call runs at its
// own speed. It reports syscalls/msg, failed/msg and fdatasync/msg, and
// logs each call's count; it is skipped without perf on PATH, or where
// the kernel does not let it count.
//
//	go test -run '^$' -bench MessageSyscallsCounted -benchtime 100x -count 5 ./bench
func BenchmarkMessageSyscallsCounted(b *testing.B) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		b.Skip("no perf on PATH")
	}
	if msg, err := exec.Command(perf, "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "--", "true").CombinedOutput(); err != nil {
		b.Skipf("perf cannot count system calls here: %v: %s", err, msg)
	}
	eachServer(b, func(b *testing.B, program string, each bool) { messageCounted(b, perf, program, each) })
}

// counted are the calls whose counts are logged one by one; the rest are
// counted in the total. The names are the kernel's tracepoints'
// (newfstat is fstat).
var counted = []string{
	"read", "write", "writev", "recvfrom", "sendto", "pread64", "pwrite64", "openat", "close",
	"newfstat", "newfstatat", "flock", "fdatasync", "fsync", "futex", "nanosleep", "epoll_pwait",
	"epoll_ctl", "accept4", "getsockname", "setsockopt", "sched_yield", "madvise", "mmap",
	"munmap", "tgkill", "getpid", "rt_sigreturn", "clone3", "mprotect", "fcntl",
}

// messageCounted counts program's calls over b.N messages, each on a
// connection of its own with each: perf stat attached to every thread of
// its process, its counters enabled once the warm-up is done and
// disabled after the last message, each through its control FIFO, which
// answers once done.
func messageCounted(b *testing.B, perf, program string, each bool) {
	s := serveWindow(b, program, 0, each)
	pid := s.unit.PID()
	dir := b.TempDir()
	ctl, ack, out := filepath.Join(dir, "ctl"), filepath.Join(dir, "ack"), filepath.Join(dir, "counts.csv")
	for _, f := range []string{ctl, ack} {
		if err := unix.Mkfifo(f, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	args := []string{"stat", "-x", ",", "-o", out, "-D", "-1", "--control", "fifo:" + ctl + "," + ack,
		"-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit", "--filter", "ret < 0"}
	for _, name := range counted {
		args = append(args, "-e", "syscalls:sys_enter_"+name)
	}
	cmd := exec.Command(perf, append(args, "-p", strconv.Itoa(pid))...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Both ends of each FIFO are opened here, so no open waits for perf;
	// perf answers each command on ack once done.
	w, err := os.OpenFile(ctl, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r, err := os.OpenFile(ack, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	acks := make(chan string)
	go func() {
		br := bufio.NewReader(r)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			acks <- l
		}
	}()
	control := func(cmd string) {
		if _, err := w.WriteString(cmd + "\n"); err != nil {
			b.Fatalf("perf %s: %v", cmd, err)
		}
		select {
		case l := <-acks:
			// perf writes its answer with the string's NUL after it.
			if strings.Trim(l, "\x00") != "ack\n" {
				b.Fatalf("perf %s: answered %q: %s", cmd, l, stderr.String())
			}
		case <-exited:
			b.Fatalf("perf ended before it answered %s: %s", cmd, stderr.String())
		}
	}
	threads := taskCount(b, pid)
	control("enable")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.send(s.warmed + i)
	}
	b.StopTimer()
	control("disable")
	if n := taskCount(b, pid); n != threads {
		b.Logf("%d threads at the start, %d at the end: the calls of those begun meanwhile are not counted", threads, n)
	}
	cmd.Process.Signal(os.Interrupt)
	<-exited
	counts, err := readCounts(out)
	if err != nil {
		b.Fatalf("%v: %s", err, stderr.String())
	}
	n := float64(b.N)
	b.ReportMetric(float64(counts["raw_syscalls:sys_enter"])/n, "syscalls/msg")
	b.ReportMetric(float64(counts["raw_syscalls:sys_exit"])/n, "failed/msg")
	b.ReportMetric(float64(counts["syscalls:sys_enter_fdatasync"])/n, "fdatasync/msg")
	var rows []string
	for name, c := range counts {
		if call, ok := strings.CutPrefix(name, "syscalls:sys_enter_"); ok && c > 0 {
			rows = append(rows, fmt.Sprintf("%7.2f %s", float64(c)/n, call))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(rows)))
	b.Logf("per message:\n%s", strings.Join(rows, "\n"))
}

// taskCount is how many threads process pid has.
func taskCount(b *testing.B, pid int) int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	return len(tasks)
}

// readCounts reads perf stat -x,'s lines: each event's count by its name.
// A counter the kernel would not let perf read is an error.
func readCounts(path string) (map[string]int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Split(l, ",")
		if len(f) < 3 || strings.HasPrefix(l, "#") {
			continue
		}
		c, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %q is not a count", path, f[2], f[0])
		}
		counts[f[2]] = c
	}
	if _, ok := counts["raw_syscalls:sys_enter"]; !ok {
		return nil, fmt.Errorf("%s: no count of raw_syscalls:sys_enter", path)
	}
	return counts, nil
}
