package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/loadgen/scripted"
)

// programs are the servers BenchmarkMessageCPU builds once per run: the
// floor and Link Harness, in a folder removed by TestMain.
var programs struct {
	once  sync.Once
	dir   string
	floor string
	link  string
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if programs.dir != "" {
		os.RemoveAll(programs.dir)
	}
	os.Exit(code)
}

// build builds the floor and lnk-link-harness, once.
func build(b *testing.B) (floor, link string) {
	programs.once.Do(func() {
		if programs.dir, programs.err = os.MkdirTemp("", "lnk-bench-"); programs.err != nil {
			return
		}
		programs.floor = filepath.Join(programs.dir, "floor")
		programs.link = filepath.Join(programs.dir, drive.ProgramName)
		for pkg, out := range map[string]string{"./floor": programs.floor, "../cmd/lnk-link-harness": programs.link} {
			if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
				programs.err = fmt.Errorf("building %s: %v: %s", pkg, err, msg)
				return
			}
		}
	})
	if programs.err != nil {
		b.Fatal(programs.err)
	}
	return programs.floor, programs.link
}

// warmup is how many messages a server answers before it is measured, at
// the least, and warmFor how long it answers them: a warm server's
// conversation is older than the fraction of a second in which what it
// keeps of a folder is read afresh (stores.settled).
const (
	warmup  = 20
	warmFor = 300 * time.Millisecond
)

// BenchmarkMessageCPU is a server's own CPU per message, from its
// process's CPU-time clock, over b.N messages one after another in one
// conversation on one kept-alive connection, the scripted model answering
// at once: the floor (bench/floor, the least a warm harness does) and Link
// Harness, one after the other in the same run, so their ratio holds on a
// machine whose speed drifts. LNK_BENCH_BEFORE names another
// lnk-link-harness program, measured beside them as server=before (a
// build of an earlier commit). Each sample starts its server afresh.
// cpu-ms/msg is the figure; model-dials counts the connections the server
// opened to the model in the whole sample, its warm-up's included.
//
//	go test -run '^$' -bench MessageCPU -benchtime 200x -count 10 ./bench
func BenchmarkMessageCPU(b *testing.B) {
	eachServer(b, messageCPU)
}

// server is a program a benchmark measures, by the name its results bear.
type server struct{ name, program string }

// servers are the programs BenchmarkMessageCPU and
// BenchmarkMessageSyscalls measure: the floor, lnk-link-harness, and the
// program LNK_BENCH_BEFORE names, when it names one.
func servers(b *testing.B) []server {
	floor, link := build(b)
	s := []server{{"floor", floor}, {"link", link}}
	if before := os.Getenv("LNK_BENCH_BEFORE"); before != "" {
		s = append(s, server{"before", before})
	}
	return s
}

// eachServer runs measure as a sub-benchmark for each server and each way
// of connecting, server=NAME/conn=WAY.
func eachServer(b *testing.B, measure func(b *testing.B, program string, each bool)) {
	for _, s := range servers(b) {
		for _, c := range conns {
			b.Run("server="+s.name+"/conn="+c.name, func(b *testing.B) { measure(b, s.program, c.each) })
		}
	}
}

// conns are the two ways a caller connects that BenchmarkMessageCPU and
// BenchmarkMessageSyscalls measure: one connection kept alive for every
// message, and a connection of its own for each, as Link's bridge opens.
var conns = []struct {
	name string
	each bool
}{{"kept", false}, {"each", true}}

// BenchmarkMessageCPUWindow is BenchmarkMessageCPU's figure for Link
// Harness in a new conversation (window=0, its window small throughout)
// and in one whose window already holds 800 messages (window=800, about
// 100 KB a request, growing by two events a message, written before the
// server starts), one after the other in the same run, so their ratio
// holds on a machine whose speed drifts: a turn whose cost does not grow
// with the window costs about the same in both. LNK_BENCH_BEFORE names
// another lnk-link-harness program, measured beside it as server=before.
//
//	go test -run '^$' -bench MessageCPUWindow -benchtime 200x -count 5 ./bench
func BenchmarkMessageCPUWindow(b *testing.B) {
	_, link := build(b)
	servers := []struct{ name, program string }{{"link", link}}
	if before := os.Getenv("LNK_BENCH_BEFORE"); before != "" {
		servers = append(servers, struct{ name, program string }{"before", before})
	}
	for _, s := range servers {
		for _, window := range []int{0, 800} {
			b.Run(fmt.Sprintf("server=%s/window=%d", s.name, window), func(b *testing.B) { messageCPUWindow(b, s.program, window) })
		}
	}
}

// messageCPUWindow measures program over b.N messages in a conversation
// whose window holds window messages first.
func messageCPUWindow(b *testing.B, program string, window int) {
	sendMeasured(b, serveWindow(b, program, window, false))
}

// writeWindow writes n events of the conversation thread of the agent at
// dir, messages and answers in turn, about 120 bytes of text each, every
// answer's window starting at the first event.
func writeWindow(b *testing.B, dir, thread string, n int) {
	chat, err := home.Agent{Dir: dir}.Path(home.Chat, thread)
	if err != nil {
		b.Fatal(err)
	}
	hometest.WriteLog(b, chat, thread, time.Now().Add(-time.Hour), n, hometest.Window("[Thu 2026-12-03 09:00 UTC · bench]", 6))
}

// served is one server process started for a benchmark, its warm-up
// answered, and the scripted model it talks to.
type served struct {
	unit   drive.Unit
	send   func(i int)
	model  *scripted.Server
	warmed int // the messages of the warm-up
}

// serveWindow starts program serving one agent against a scripted model
// of its own, the conversation's window holding window messages before it
// starts, and sends it the warm-up's messages: each on a connection of its
// own with each, else on one kept alive. The process is stopped when b
// ends.
func serveWindow(b *testing.B, program string, window int, each bool) *served {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	model := scripted.New(nil)
	go model.Serve(ln)
	b.Cleanup(func() { model.Close() })

	dir := b.TempDir()
	a := drive.Agent{
		Name:    "ada",
		Home:    filepath.Join(dir, "ada"), // the agent is named by its home
		Key:     "k-0123456789abcdef0123456789abcdef",
		KeyFile: filepath.Join(dir, "key"),
		Model:   "http://" + ln.Addr().String(),
		Scratch: filepath.Join(dir, "scratch"),
	}
	for _, d := range []string{a.Home, a.Scratch} {
		if err := os.Mkdir(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(a.KeyFile, []byte(a.Key+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if window > 0 {
		writeWindow(b, a.Home, "bench", window)
	}
	ctx := context.Background()
	// LNK_BENCH_PROFILE names a file the server's CPU profile of its
	// whole life is copied to when it stops (the last sample's, of a run).
	profile := os.Getenv("LNK_BENCH_PROFILE")
	unit, err := (&drive.Link{Program: program, Profile: profile != ""}).Start(ctx, []drive.Agent{a})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := unit.Stop(stop); err != nil {
			b.Error(err)
		}
		if profile != "" {
			p, err := os.ReadFile(filepath.Join(a.Scratch, "cpu.pprof"))
			if err == nil {
				err = os.WriteFile(profile, p, 0o600)
			}
			if err != nil {
				b.Error(err)
			}
		}
	})
	send := func(i int) {
		m := drive.Message{ID: fmt.Sprintf("m%d", i), Text: fmt.Sprintf("message %d: how are you today?", i)}
		r, err := unit.Send(ctx, a.Name, "bench", m)
		if err != nil {
			b.Fatal(err)
		}
		if each {
			unit.(interface{ CloseIdle() }).CloseIdle() // the next message dials again
		}
		if r.Text == "" {
			b.Fatalf("message %s: an empty answer", m.ID)
		}
	}
	n := 0
	for start := time.Now(); n < warmup || time.Since(start) < warmFor; n++ {
		send(n)
	}
	return &served{unit: unit, send: send, model: model, warmed: n}
}

// messageCPU measures program over b.N messages, each on a connection of
// its own with each.
func messageCPU(b *testing.B, program string, each bool) {
	s := serveWindow(b, program, 0, each)
	b.ReportAllocs()
	sendMeasured(b, s)
	b.ReportMetric(float64(s.model.Conns()), "model-dials")
}

// BenchmarkMessageCPUPaired is BenchmarkMessageCPU's comparison made a
// message at a time: the floor and Link Harness both serve, each message
// sent to the floor and then its twin to Link Harness, so a machine whose
// speed drifts over a run (BenchmarkMessageCPU measures each server's
// samples one after another) slows both alike. It reports each one's CPU
// a message and link/floor, Link Harness's over the floor's, per sample.
//
//	go test -run '^$' -bench MessageCPUPaired -benchtime 200x -count 10 ./bench
func BenchmarkMessageCPUPaired(b *testing.B) {
	floor, link := build(b)
	for _, c := range conns {
		b.Run("conn="+c.name, func(b *testing.B) {
			pair := []*served{serveWindow(b, floor, 0, c.each), serveWindow(b, link, 0, c.each)}
			start := make([]proc.Sample, len(pair))
			for i, s := range pair {
				start[i] = readProc(b, s)
			}
			b.ResetTimer()
			for i := range b.N {
				for _, s := range pair {
					s.send(s.warmed + i)
				}
			}
			b.StopTimer()
			ms := make([]float64, len(pair))
			for i, s := range pair {
				ms[i] = proc.CPUSeconds(start[i], readProc(b, s)) * 1e3 / float64(b.N)
			}
			b.ReportMetric(ms[0], "floor-cpu-ms/msg")
			b.ReportMetric(ms[1], "link-cpu-ms/msg")
			b.ReportMetric(ms[1]/ms[0], "link/floor")
		})
	}
}

// readProc reads s's server process's counts.
func readProc(b *testing.B, s *served) proc.Sample {
	p, err := proc.Read(s.unit.PID(), false)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// sendMeasured sends s b.N messages after its warm-up, the benchmark's
// timer running, and reports the server process's CPU time a message.
func sendMeasured(b *testing.B, s *served) {
	measureCPU(b, s, func() {
		for i := range b.N {
			s.send(s.warmed + i)
		}
	})
}

// measureCPU runs send, which sends s's server b.N messages, the
// benchmark's timer running, and reports the server process's CPU time a
// message.
func measureCPU(b *testing.B, s *served, send func()) {
	start := readProc(b, s)
	b.ResetTimer()
	send()
	b.StopTimer()
	b.ReportMetric(proc.CPUSeconds(start, readProc(b, s))*1e3/float64(b.N), "cpu-ms/msg")
}

// BenchmarkMessageSyscalls counts a server's system calls per message with
// strace attached to every thread of its process over b.N messages, the
// warm-up's left out: syscalls/msg in all, fdatasync/msg, connect/msg
// and failed/msg (calls that returned an error). The servers are those of
// BenchmarkMessageCPU; it is skipped without strace on PATH. Times under
// strace mean nothing: only the counts are figures.
//
//	go test -run '^$' -bench MessageSyscalls -benchtime 100x -count 3 ./bench
func BenchmarkMessageSyscalls(b *testing.B) {
	tracer, err := exec.LookPath("strace")
	if err != nil {
		b.Skip("no strace on PATH")
	}
	eachServer(b, func(b *testing.B, program string, each bool) { messageSyscalls(b, tracer, program, each) })
}

// messageSyscalls traces program over b.N messages, each on a connection
// of its own with each.
func messageSyscalls(b *testing.B, tracer, program string, each bool) {
	s := serveWindow(b, program, 0, each)
	pid := s.unit.PID()
	out := filepath.Join(b.TempDir(), "strace.txt")
	cmd := exec.Command(tracer, "-f", "-c", "-U", "name,calls,errors", "-o", out, "-p", strconv.Itoa(pid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// strace says "Process N attached with K threads" once it traces
	// every thread there is; the messages go then.
	lines := bufio.NewScanner(stderr)
	attached := false
	for !attached && lines.Scan() {
		attached = strings.Contains(lines.Text(), "attached")
	}
	if !attached {
		b.Fatalf("strace never said it attached to process %d", pid)
	}
	go io.Copy(io.Discard, stderr)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.send(s.warmed + i)
	}
	b.StopTimer()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		b.Fatal(err)
	}
	// strace ends by the signal it was sent, once it has written its
	// table: its table is what says it worked.
	cmd.Wait()
	counts, errs, err := readSummary(out)
	if err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(counts["total"])/n, "syscalls/msg")
	b.ReportMetric(float64(counts["fdatasync"])/n, "fdatasync/msg")
	b.ReportMetric(float64(counts["connect"])/n, "connect/msg")
	b.ReportMetric(float64(errs["total"])/n, "failed/msg")
	var rows []string
	for name, c := range counts {
		if name != "total" {
			rows = append(rows, fmt.Sprintf("%7.2f %s (%.2f failed)", float64(c)/n, name, float64(errs[name])/n))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(rows)))
	b.Logf("per message:\n%s", strings.Join(rows, "\n"))
}

// readSummary reads strace -c -U name,calls,errors's table: each system
// call's count and how many of them failed, "total" among them.
func readSummary(path string) (counts, errs map[string]int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	counts, errs = map[string]int{}, map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(f[0], "-") || f[0] == "syscall" {
			continue
		}
		if counts[f[0]], err = strconv.Atoi(f[1]); err != nil {
			return nil, nil, fmt.Errorf("%s: line %q: %v", path, l, err)
		}
		if len(f) > 2 {
			if errs[f[0]], err = strconv.Atoi(f[2]); err != nil {
				return nil, nil, fmt.Errorf("%s: line %q: %v", path, l, err)
			}
		}
	}
	if _, ok := counts["total"]; !ok {
		return nil, nil, fmt.Errorf("%s: no total in strace's summary", path)
	}
	return counts, errs, nil
}
