package compact

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/storetest"
)

// childEnv names what a re-executed test binary is to do.
const childEnv = "LNK_STORE_COMPACT_CHILD"

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

// killAtEnv hands TestCrashChild the point at which it stops to be killed.
const killAtEnv = "LNK_KILL_AT"

// killPoint is where TestCrash's writer stops to be killed: at its n-th
// disk operation op on file, before it, after it, or part way through it
// (a write with only a prefix of its bytes written; a sync or a truncate
// part way is one done). op and file may be "*", any.
type killPoint struct {
	op   string // "write", "sync", "truncate" or "*"
	file string // FramesName, TailName or "*"
	n    int
	how  string // "before", "part" or "after"
}

func (p killPoint) String() string { return fmt.Sprintf("%s %s %d %s", p.op, p.file, p.n, p.how) }

func parseKillPoint(s string) (killPoint, error) {
	var p killPoint
	if _, err := fmt.Sscan(s, &p.op, &p.file, &p.n, &p.how); err != nil {
		return p, fmt.Errorf("kill point %q: %v", s, err)
	}
	return p, nil
}

// planKill chooses where the writer of kill number kill stops. Three
// kills in four aim at what a crash leaves that the store must repair: a
// unit cut short (part way through a fold's write of events.zst), a torn
// tail line (part way through a line's write), a tail still holding the
// events a unit holds (a fold's unit durable, the tail not yet emptied).
// The fourth stops at any of the writer's first 30 disk operations.
func planKill(kill int, rng *rand.Rand) killPoint {
	switch kill % 4 {
	case 0:
		return killPoint{"write", FramesName, 1 + rng.IntN(2), "part"}
	case 1:
		return killPoint{"write", TailName, 1 + rng.IntN(8), "part"}
	case 2:
		return killPoint{"sync", FramesName, 1 + rng.IntN(2), "after"}
	}
	return killPoint{"*", "*", 1 + rng.IntN(30), [...]string{"before", "part", "after"}[rng.IntN(3)]}
}

// TestCrash kills a writer process with SIGKILL again and again, each
// time where the writer reports it has stopped: before, after or part way
// through one of its disk operations, chosen from the test's seed
// (storetest.Seed), in its appends and in its folds. After each kill it
// checks that every acknowledged event is there once, byte for byte, seqs
// from 1 without a gap, reading forward and back; and it counts what the
// kill left: a unit cut short at the end of events.zst (which the next
// fold must cut off and keep in events.zst.torn), a tail still holding a
// frame's events, an incomplete tail line. It fails if it saw none of one
// of those: then it proved nothing about their repair.
func TestCrash(t *testing.T) {
	kills := 120
	if s := os.Getenv("LNK_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		kills = 20
	} else if raceOn && os.Getenv("LNK_CRASH_KILLS") == "" {
		kills = 40 // a race-built writer takes 0.4 s a life
	}
	seed := storetest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	ctx := context.Background()
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
		at := planKill(kill, rng)
		where := fmt.Sprintf("seed %d, kill %d at %v", seed, kill, at)
		acked = max(acked, killWriter(t, dir, at, where))

		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var s snap
		if _, err := c.snapshot(ctx, &s, false); err != nil {
			t.Fatalf("%s: %v", where, err)
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
				t.Fatalf("%s: the unit cut short at offset %d is still there, past another at %d", where, pendingCut, s.end)
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
			t.Fatalf("%s: seq %d was acknowledged, but the conversation ends at %d", where, acked, last)
		}
		from := max(1, checked-8)
		if kill%50 == 49 || kill == kills-1 {
			from = 1 // now and then, all of it
		}
		checkRun(t, c, from, last, where)
		checked = last
		c.Close()
	}
	t.Logf("%d kills, %d events; %d units cut short seen, %d of them cut off by a later fold; %d tails holding framed events; %d torn tail lines",
		kills, acked, cuts, cutOff, duplicates, tornLines)
	switch {
	case cuts == 0:
		t.Fatalf("seed %d: no kill left a unit cut short: the test proved nothing about them", seed)
	case duplicates == 0:
		t.Fatalf("seed %d: no kill left a tail holding framed events: the test proved nothing about them", seed)
	case tornLines == 0:
		t.Fatalf("seed %d: no kill left a torn tail line: the test proved nothing about them", seed)
	case cuts-cutOff > 1:
		t.Fatalf("seed %d: %d units cut short were never cut off", seed, cuts-cutOff)
	}
}

// killWriter starts a writer (TestCrashChild) on dir that stops at at,
// kills it with SIGKILL once it reports it has stopped there, and returns
// the highest seq it acknowledged.
func killWriter(t *testing.T, dir string, at killPoint, where string) (acked int64) {
	t.Helper()
	cmd := storetest.Child("TestCrashChild", childEnv+"=crash", "LNK_DIR="+dir, killAtEnv+"="+at.String())
	storetest.KillAtStop(t, cmd, where, func(l string) {
		if s, ok := strings.CutPrefix(l, "ack "); ok {
			n, _ := strconv.ParseInt(s, 10, 64)
			acked = max(acked, n)
		}
	})
	return acked
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

// killAt is TestCrashChild's change to events.zst and the tail: at its
// kill point at, a write, sync or truncate does what the point says of the
// operation there, reports it and waits to be killed.
func killAt(at killPoint) func(c change) (int, error) {
	seen := 0 // operations that matched at's op and file
	return func(c change) (int, error) {
		if (at.op != "*" && at.op != c.op) || (at.file != "*" && at.file != filepath.Base(c.f.Name())) {
			return c.do()
		}
		if seen++; seen != at.n {
			return c.do()
		}
		what := "a " + c.op
		switch {
		case at.how == "before":
			stop(c, "before "+what)
		case at.how == "part" && c.op == "write" && len(c.b) > 1:
			cut := 1 + int(uint64(c.off)*0x9e3779b97f4a7c15%uint64(len(c.b)-1))
			if _, err := c.f.WriteAt(c.b[:cut], c.off); err != nil {
				return 0, err
			}
			stop(c, fmt.Sprintf("%d bytes into a write of %d", cut, len(c.b)))
		}
		n, err := c.do()
		if err == nil {
			stop(c, "after "+what)
		}
		return n, err
	}
}

// stop reports where the writer is and waits for its SIGKILL. Should the
// test end first, its standard input ends, and so does the writer.
func stop(c change, what string) {
	fmt.Printf("stopped %s %s at offset %d\n", what, filepath.Base(c.f.Name()), c.off)
	io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

// TestCrashChild is TestCrash's writer: run alone, it skips. It appends
// crashEvent(seq) from the next free seq, folding every crashFold events,
// printing "ack seq" only once Append has returned, until it stops at its
// kill point (killAtEnv) and says so. It fails if it appends 1000 events
// without reaching it.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "crash" {
		t.Skip("a child of TestCrash")
	}
	at, err := parseKillPoint(os.Getenv(killAtEnv))
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenOptions(os.Getenv("LNK_DIR"), Options{FS: &changeFS{FS: disk.OS, picks: named(FramesName, TailName), change: killAt(at)}})
	if err != nil {
		t.Fatal(err)
	}
	c.foldEvents = crashFold
	ctx := context.Background()
	seq, err := c.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		seq++
		if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ack %d\n", seq)
	}
	t.Fatalf("1000 appends, and no stop at %v", at)
}
