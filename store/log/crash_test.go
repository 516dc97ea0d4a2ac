package log

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

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// crashEvent is the event the crash test's writer appends at seq: its bytes
// follow from seq alone, and about one in six is large (64 to 256 KiB), so
// a kill can land while one is being written.
func crashEvent(seq int64) []byte {
	r := rand.New(rand.NewPCG(uint64(seq), 7))
	n := 400 + r.IntN(400)
	if r.IntN(6) == 0 {
		n = 64<<10 + r.IntN(192<<10)
	}
	e := event.Event{Seq: seq, Time: time.Unix(1767225600+seq, 0).UTC(), Type: event.TypeAnswer, Text: text(seq, n)}
	return event.Append(nil, &e)
}

// staged says whether the crash test's writer writes seq in two write
// calls with a pause between, as a writer dying in the middle of its write
// leaves it (see TestCrashChild).
func staged(seq int64) bool { return seq%4 == 3 }

// killAtEnv hands TestCrashChild the point at which it stops to be killed.
const killAtEnv = "LNK_KILL_AT"

// killPoint is where TestCrash's writer stops to be killed: once it has
// acknowledged its n-th append ("ack"), or inside its n-th staged append,
// under the writers' lock, with part of the line written ("split") or all
// of it but before its fdatasync ("whole").
type killPoint struct {
	at string // "ack", "split" or "whole"
	n  int
}

func (p killPoint) String() string { return fmt.Sprintf("%s %d", p.at, p.n) }

// planKill chooses where the writer of kill number kill stops: one kill
// in three inside a staged append part way, so that torn tails come often.
func planKill(kill int, rng *rand.Rand) killPoint {
	switch kill % 3 {
	case 0:
		return killPoint{"split", 1 + rng.IntN(3)}
	case 1:
		return killPoint{"whole", 1 + rng.IntN(3)}
	}
	return killPoint{"ack", 1 + rng.IntN(12)}
}

// TestCrash kills a writer process with SIGKILL again and again, each time
// where the writer reports it has stopped, a point chosen from the test's
// seed (storetest.Seed): between two appends, or in the middle of a staged
// append, which the writer makes itself with real write calls under the
// real lock, as a writer killed in the middle of its write leaves it.
// After each kill it checks that every append the writer acknowledged is
// in the log, byte for byte, that seqs run from 1 without a gap, and that
// a torn tail, if the kill left one, is cut and kept by the next append,
// which then succeeds. The test fails if it saw no torn tail: then it
// proved nothing about repair.
func TestCrash(t *testing.T) {
	kills := 300
	if s := os.Getenv("LNK_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		kills = 20
	}
	seed := storetest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	c := open(t, dir)
	ctx := context.Background()

	var (
		checked    int64 // seqs verified so far
		checkedOff int64 // where the line after them starts
		acked      int64 // the highest seq a writer acknowledged
		torn       int   // torn tails left by a kill inside a staged append
		kept       int   // records in the torn file
	)
	for kill := range kills {
		at := planKill(kill, rng)
		where := fmt.Sprintf("seed %d, kill %d at %v", seed, kill, at)
		ack, splitting := killWriter(t, dir, at, where)
		acked = max(acked, ack)

		// Every acknowledged event is there, byte for byte, in order.
		tail := readFrom(t, path, checkedOff)
		for {
			i := bytes.IndexByte(tail, '\n')
			if i < 0 {
				break
			}
			if !bytes.Equal(tail[:i], crashEvent(checked+1)) {
				t.Fatalf("%s: the line at offset %d is not seq %d's event", where, checkedOff, checked+1)
			}
			checked++
			checkedOff += int64(i + 1)
			tail = tail[i+1:]
		}
		if checked < acked {
			t.Fatalf("%s: seq %d was acknowledged, but the log ends at %d", where, acked, checked)
		}
		if len(tail) == 0 {
			continue
		}

		// A torn tail: part of the next event, which its writer never
		// acknowledged.
		next := crashEvent(checked + 1)
		if !bytes.HasPrefix(next, tail) {
			t.Fatalf("%s: the torn tail at offset %d is not part of seq %d's event", where, checkedOff, checked+1)
		}
		if splitting != checked+1 {
			t.Fatalf("%s: a torn tail of seq %d, %d of %d bytes, which the writer was not staging", where, checked+1, len(tail), len(next)+1)
		}
		torn++
		if last, err := c.Last(ctx); err != nil || last != checked {
			t.Fatalf("%s: Last = %d, %v with a torn tail; want %d", where, last, err, checked)
		}
		// An acknowledged seq again, same bytes: accepted, the tail left.
		if checked > 0 {
			if err := c.Append(ctx, checked, crashEvent(checked)); err != nil {
				t.Fatalf("%s: the same bytes again: %v", where, err)
			}
		}
		if err := c.Append(ctx, checked+1, next); err != nil {
			t.Fatalf("%s: the append after a torn tail: %v", where, err)
		}
		kept++
		if got := readFrom(t, path, checkedOff); !bytes.Equal(got, append(next, '\n')) {
			t.Fatalf("%s: the torn tail was not replaced by the next event", where)
		}
		if rec := lastTornRecord(t, dir, kept); rec.off != checkedOff || !bytes.Equal(rec.bytes, tail) {
			t.Fatalf("%s: the torn file's last record is %d bytes from offset %d; want %d from %d",
				where, len(rec.bytes), rec.off, len(tail), checkedOff)
		}
		checked++
		checkedOff += int64(len(next) + 1)
	}
	t.Logf("%d kills, %d events, %d torn tails", kills, checked, torn)
	if torn == 0 {
		t.Fatalf("seed %d: no kill left a torn tail: the test proved nothing about repair", seed)
	}
	got, err := collect(c, 1, false, 0)
	if err != nil || int64(len(got)) != checked {
		t.Fatalf("seed %d: reading it all: %d events, %v", seed, len(got), err)
	}
}

// killWriter starts a writer (TestCrashChild) on dir that stops at at,
// kills it with SIGKILL once it reports it has stopped there, and returns
// the highest seq it acknowledged and the seq it was staging when killed,
// or 0.
func killWriter(t *testing.T, dir string, at killPoint, where string) (acked, splitting int64) {
	t.Helper()
	cmd := storetest.Child("TestCrashChild", childEnv+"=crash", "LNK_DIR="+dir, killAtEnv+"="+at.String())
	storetest.KillAtStop(t, cmd, where, func(l string) {
		if s, ok := strings.CutPrefix(l, "ack "); ok {
			n, _ := strconv.ParseInt(s, 10, 64)
			acked = max(acked, n)
			if n == splitting {
				splitting = 0
			}
		} else if s, ok := strings.CutPrefix(l, "split "); ok {
			splitting, _ = strconv.ParseInt(s, 10, 64)
		}
	})
	return acked, splitting
}

// readFrom reads path from off to its end.
func readFrom(t *testing.T, path string, off int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<40))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type tornRecord struct {
	off   int64
	bytes []byte
}

// lastTornRecord reads the torn file, checks it holds n records, and
// returns the last.
func lastTornRecord(t *testing.T, dir string, n int) tornRecord {
	t.Helper()
	lines := strings.Split(string(readFile(t, filepath.Join(dir, TornFileName))), "\n")
	if len(lines) != 2*n+1 || lines[2*n] != "" {
		t.Fatalf("the torn file holds %d lines; want %d records", len(lines), n)
	}
	var rec tornRecord
	var size int
	if _, err := fmt.Sscanf(lines[2*n-2], "# events.jsonl offset %d, %d bytes, cut ", &rec.off, &size); err != nil {
		t.Fatalf("the torn record %q: %v", lines[2*n-2], err)
	}
	rec.bytes = []byte(lines[2*n-1])
	if size != len(rec.bytes) {
		t.Fatalf("the torn record says %d bytes and holds %d", size, len(rec.bytes))
	}
	return rec
}

// TestCrashChild is TestCrash's writer: run alone, it skips. It appends
// crashEvent(seq) from the next free seq, printing "ack seq" only once the
// append has returned, until it reaches its kill point (killAtEnv), says
// "stopped" and waits to be killed. It fails if it appends 1000 events
// without reaching it.
//
// A staged append is what a writer killed in the middle of its write
// leaves behind, made on purpose: under the writers' lock it writes the
// first part of the line with one write call on its own descriptor of the
// log (having printed "split seq" just before), and the rest with a
// second. It is only ever made after an ordinary Append of the same run,
// so the file ends with a complete line when it starts.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "crash" {
		t.Skip("a child of TestCrash")
	}
	var at killPoint
	if _, err := fmt.Sscan(os.Getenv(killAtEnv), &at.at, &at.n); err != nil {
		t.Fatalf("kill point %q: %v", os.Getenv(killAtEnv), err)
	}
	dir := os.Getenv("LNK_DIR")
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seq, err := c.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acks, stagings := 0, 0
	for first := true; acks < 1000; first = false {
		seq++
		if first || !staged(seq) {
			if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
				t.Fatal(err)
			}
		} else {
			stagings++
			stop := ""
			if stagings == at.n {
				stop = at.at
			}
			if err := stagedAppend(filepath.Join(dir, FileName), seq, stop); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Printf("ack %d\n", seq)
		if acks++; at.at == "ack" && acks == at.n {
			waitForKill("after ack")
		}
	}
	t.Fatalf("1000 appends, and no stop at %v", at)
}

// waitForKill says the writer stopped at what and waits for its SIGKILL.
// Should the test end first, the writer's standard input ends, and so does
// the writer.
func waitForKill(what string) {
	fmt.Printf("stopped %s\n", what)
	io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

// stagedAppend appends seq's line in two write calls under the writers'
// lock, stopping for the kill after the first ("split") or after both,
// before the fdatasync ("whole"), if stop says so.
func stagedAppend(path string, seq int64, stop string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return err
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	line := append(crashEvent(seq), '\n')
	cut := 1 + int(uint64(seq)*0x9e3779b97f4a7c15%uint64(len(line)-1))
	fmt.Printf("split %d\n", seq)
	if _, err := f.WriteAt(line[:cut], end); err != nil {
		return err
	}
	if stop == "split" {
		waitForKill(fmt.Sprintf("%d bytes into seq %d's line of %d", cut, seq, len(line)))
	}
	if _, err := f.WriteAt(line[cut:], end+int64(cut)); err != nil {
		return err
	}
	if stop == "whole" {
		waitForKill(fmt.Sprintf("seq %d's line written, not synced", seq))
	}
	return unix.Fdatasync(fd)
}
