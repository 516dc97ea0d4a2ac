package compact

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
)

// childEnv names what a re-executed test binary is to do.
const childEnv = "LNK_STORE_COMPACT_CHILD"

// child starts this test binary again running only the test run, with env.
func child(t *testing.T, run string, env ...string) *exec.Cmd {
	if t != nil {
		t.Helper()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// crashEvent is the event the crash test's writer appends at seq: its
// bytes follow from seq alone; about one in eight is large (8 to 32 KiB).
func crashEvent(seq int64) []byte {
	r := rand.New(rand.NewPCG(uint64(seq), 9))
	n := 300 + r.IntN(500)
	if r.IntN(8) == 0 {
		n = 8<<10 + r.IntN(24<<10)
	}
	e := event.Event{Seq: seq, Time: time.Unix(1767225600+seq, 0).UTC(), Type: event.TypeAnswer, Text: text(seq, n)}
	if seq == 1 {
		e.Thread = testThread
	}
	return event.Append(nil, &e)
}

// crashFold is how many events the crash test's writer folds at a time:
// few, so kills land in folds often.
const crashFold = 4

// TestCrash kills a writer process with SIGKILL at random moments, again
// and again: while it appends, and while it folds. After each kill it
// checks that every acknowledged event is there once, byte for byte, seqs
// from 1 without a gap, reading forward and back; and it counts what the
// kill left: a unit cut short at the end of events.zst (which the next
// fold must cut off and keep in events.zst.torn), a tail still holding a
// frame's events, an incomplete tail line. Some folds write their unit in
// two parts with a pause between (a stagedDisk), so that kills land inside
// a unit's write; the test fails if it saw no cut unit.
func TestCrash(t *testing.T) {
	kills := 300
	if s := os.Getenv("LNK_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		kills = 20
	} else if raceOn && os.Getenv("LNK_CRASH_KILLS") == "" {
		kills = 100 // a race-built writer takes 0.4 s a life: 300 is the plain run's
	}
	dir := t.TempDir()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var (
		acked       int64 // the highest seq a writer acknowledged
		cuts        int   // units cut short seen at the end of events.zst
		cutOff      int   // of those, cut off by a later fold
		duplicates  int   // tails seen still holding a frame's events
		tornLines   int   // incomplete tail lines seen
		pendingCut  = int64(-1)
		checked     int64 // the last seq checked
		tornRecords int
	)
	for kill := range kills {
		cmd := child(t, "TestCrashChild", childEnv+"=crash", "LNK_DIR="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		if l := <-lines; l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: the writer said %q, not ready", kill, l)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(60 * time.Millisecond))))
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			if s, ok := strings.CutPrefix(l, "ack "); ok {
				n, _ := strconv.ParseInt(s, 10, 64)
				acked = max(acked, n)
			}
		}
		cmd.Wait()
		if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: the writer ended with %v, not killed", kill, cmd.ProcessState)
		}

		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var s snap
		if _, err := c.snapshot(ctx, &s, false); err != nil {
			t.Fatalf("kill %d: %v", kill, err)
		}
		if n := tornCount(t, dir); n != tornRecords {
			tornRecords = n
			if pendingCut >= 0 {
				cutOff++
				pendingCut = -1
			}
		}
		if s.end < s.zsize {
			if pendingCut >= 0 && pendingCut != s.end {
				t.Fatalf("kill %d: the unit cut short at offset %d is still there, past another at %d", kill, pendingCut, s.end)
			}
			if pendingCut < 0 {
				cuts++
			}
			pendingCut = s.end
		}
		if s.skip > 0 {
			duplicates++
		}
		if s.tend < s.tsize {
			tornLines++
		}
		last := s.last()
		if last < acked {
			t.Fatalf("kill %d: seq %d was acknowledged, but the conversation ends at %d", kill, acked, last)
		}
		from := max(1, checked-8)
		if kill%50 == 49 || kill == kills-1 {
			from = 1 // now and then, all of it
		}
		checkRun(t, c, from, last, fmt.Sprintf("kill %d", kill))
		checked = last
		c.Close()
	}
	t.Logf("%d kills, %d events; %d units cut short seen, %d of them cut off by a later fold; %d tails holding framed events; %d torn tail lines",
		kills, acked, cuts, cutOff, duplicates, tornLines)
	if cuts == 0 {
		t.Fatal("no kill left a unit cut short: the test proved nothing about them")
	}
	if cuts-cutOff > 1 {
		t.Fatalf("%d units cut short were never cut off", cuts-cutOff)
	}
}

// checkRun reads the conversation from seq from to its end, forward and
// back, and checks it is crashEvent(from) … crashEvent(last), each once.
func checkRun(t *testing.T, c *Conversation, from, last int64, where string) {
	t.Helper()
	for _, reverse := range []bool{false, true} {
		want, step, start := from, int64(1), from
		if reverse {
			want, step, start = last, -1, 0
		}
		var bad string
		err := c.Read(context.Background(), start, reverse, func(seq int64, ev []byte) bool {
			if seq != want || !bytes.Equal(ev, crashEvent(seq)) {
				bad = fmt.Sprintf("seq %d where %d was due, or not its bytes", seq, want)
				return false
			}
			want += step
			return !reverse || seq > from
		})
		if err != nil || bad != "" || (!reverse && want != last+1) || (reverse && want != from-1 && last > 0) {
			t.Fatalf("%s: reading (reverse %v): %v %s; stopped before %d of %d", where, reverse, err, bad, want, last)
		}
	}
}

// tornCount counts the records in events.zst.torn.
func tornCount(t *testing.T, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, TornFramesName))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("# "+FramesName+" offset "))
}

// stagedDisk writes some units in two parts, with a pause between, as a
// writer killed in the middle of its write leaves them.
type stagedDisk struct {
	osDisk
	n int
}

func (d *stagedDisk) writeAt(f *os.File, b []byte, off int64) (int, error) {
	if filepath.Base(f.Name()) != FramesName || len(b) < 64 {
		return f.WriteAt(b, off)
	}
	d.n++
	if d.n%2 == 0 {
		return f.WriteAt(b, off)
	}
	cut := 1 + int(uint64(off)*0x9e3779b97f4a7c15%uint64(len(b)-1))
	n, err := f.WriteAt(b[:cut], off)
	if err != nil {
		return n, err
	}
	time.Sleep(3 * time.Millisecond)
	m, err := f.WriteAt(b[cut:], off+int64(cut))
	return n + m, err
}

// TestCrashChild is TestCrash's writer: run alone, it skips. It appends
// crashEvent(seq) from the next free seq, folding every crashFold events,
// until it is killed, printing "ack seq" only once Append has returned.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "crash" {
		t.Skip("a child of TestCrash")
	}
	c, err := Open(os.Getenv("LNK_DIR"))
	if err != nil {
		t.Fatal(err)
	}
	c.foldEvents = crashFold
	c.disk = &stagedDisk{}
	ctx := context.Background()
	seq, err := c.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Make the encoder now, so kills land in appends and folds, not in
	// making it.
	enc, err := encoders.get()
	if err != nil {
		t.Fatal(err)
	}
	enc.EncodeAll(crashEvent(seq+1), nil)
	encoders.put()
	fmt.Println("ready")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		seq++
		if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ack %d\n", seq)
	}
}
