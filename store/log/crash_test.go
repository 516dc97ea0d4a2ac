package log

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store/event"
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

// TestCrash kills a writer process with SIGKILL at random moments, again
// and again, and after each kill checks that every append it acknowledged
// is in the log, byte for byte, that seqs run from 1 without a gap, and
// that a torn tail, if the kill left one, is cut and kept by the next
// append, which then succeeds.
//
// Torn tails come from two places, counted apart. A kill during the
// writer's ordinary Append, when a large event's write is cut short: Linux
// stops copying a write to a file between pages when a fatal signal is
// pending, so it happens, but rarely, since the writer spends most of its
// time in fdatasync. And a kill while the writer is in the middle of a
// staged append, which the test's writer makes itself with real write
// calls under the real lock. The test fails if it saw no torn tail at all.
func TestCrash(t *testing.T) {
	kills := 300
	if s := os.Getenv("LNK_CRASH_KILLS"); s != "" {
		kills, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		kills = 20
	}
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	c := open(t, dir)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))

	var (
		checked    int64 // seqs verified so far
		checkedOff int64 // where the line after them starts
		acked      int64 // the highest seq a writer acknowledged
		natural    int   // torn tails left by a kill inside an ordinary Append
		tornStaged int   // torn tails left by a kill inside a staged append
		kept       int   // records in the torn file
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
		splitting := int64(0)
		take := func(l string) (ack bool) {
			if s, ok := strings.CutPrefix(l, "ack "); ok {
				n, _ := strconv.ParseInt(s, 10, 64)
				acked = max(acked, n)
				if n == splitting {
					splitting = 0
				}
				return true
			} else if s, ok := strings.CutPrefix(l, "split "); ok {
				splitting, _ = strconv.ParseInt(s, 10, 64)
			}
			return false
		}
		// The kill lands at a random moment after the writer's first
		// acknowledged append, so a slow writer (a race-built one, a busy
		// disk) still gets killed mid-work, not before it begins.
		first := time.After(2 * time.Second)
	wait:
		for {
			select {
			case l, ok := <-lines:
				if !ok || take(l) {
					break wait
				}
			case <-first:
				break wait
			}
		}
		time.Sleep(time.Duration(rng.Int64N(int64(12 * time.Millisecond))))
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			take(l)
		}
		cmd.Wait()
		if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: the writer ended with %v, not killed", kill, cmd.ProcessState)
		}

		// Every acknowledged event is there, byte for byte, in order.
		tail := readFrom(t, path, checkedOff)
		for {
			i := bytes.IndexByte(tail, '\n')
			if i < 0 {
				break
			}
			if !bytes.Equal(tail[:i], crashEvent(checked+1)) {
				t.Fatalf("kill %d: the line at offset %d is not seq %d's event", kill, checkedOff, checked+1)
			}
			checked++
			checkedOff += int64(i + 1)
			tail = tail[i+1:]
		}
		if checked < acked {
			t.Fatalf("kill %d: seq %d was acknowledged, but the log ends at %d", kill, acked, checked)
		}
		if len(tail) == 0 {
			continue
		}

		// A torn tail: part of the next event, which its writer never
		// acknowledged.
		next := crashEvent(checked + 1)
		if !bytes.HasPrefix(next, tail) {
			t.Fatalf("kill %d: the torn tail at offset %d is not part of seq %d's event", kill, checkedOff, checked+1)
		}
		if splitting == checked+1 {
			tornStaged++
		} else {
			natural++
			t.Logf("kill %d: a torn write of seq %d, %d of %d bytes written", kill, checked+1, len(tail), len(next)+1)
		}
		if last, err := c.Last(ctx); err != nil || last != checked {
			t.Fatalf("kill %d: Last = %d, %v with a torn tail; want %d", kill, last, err, checked)
		}
		// An acknowledged seq again, same bytes: accepted, the tail left.
		if checked > 0 {
			if err := c.Append(ctx, checked, crashEvent(checked)); err != nil {
				t.Fatalf("kill %d: the same bytes again: %v", kill, err)
			}
		}
		if err := c.Append(ctx, checked+1, next); err != nil {
			t.Fatalf("kill %d: the append after a torn tail: %v", kill, err)
		}
		kept++
		if got := readFrom(t, path, checkedOff); !bytes.Equal(got, append(next, '\n')) {
			t.Fatalf("kill %d: the torn tail was not replaced by the next event", kill)
		}
		if rec := lastTornRecord(t, dir, kept); rec.off != checkedOff || !bytes.Equal(rec.bytes, tail) {
			t.Fatalf("kill %d: the torn file's last record is %d bytes from offset %d; want %d from %d",
				kill, len(rec.bytes), rec.off, len(tail), checkedOff)
		}
		checked++
		checkedOff += int64(len(next) + 1)
	}
	t.Logf("%d kills, %d events, %d torn tails: %d inside an ordinary Append, %d inside a staged one",
		kills, checked, natural+tornStaged, natural, tornStaged)
	if natural+tornStaged == 0 {
		t.Fatal("no kill left a torn tail: the test proved nothing about repair")
	}
	got, err := collect(c, 1, false, 0)
	if err != nil || int64(len(got)) != checked {
		t.Fatalf("reading it all: %d events, %v", len(got), err)
	}
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
// crashEvent(seq) from the next free seq until it is killed, printing
// "ack seq" only once Append has returned.
//
// A staged append is what a writer killed in the middle of its write
// leaves behind, made on purpose: under the writers' lock it writes the
// first part of the line with one write call on its own descriptor of the
// log (having printed "split seq" just before), pauses, and writes the rest with a second. It
// is only ever made after an ordinary Append of the same run, so the file
// ends with a complete line when it starts.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "crash" {
		t.Skip("a child of TestCrash")
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
	fmt.Println("ready")

	deadline := time.Now().Add(10 * time.Second) // if no kill ever comes
	for first := true; time.Now().Before(deadline); first = false {
		seq++
		if first || !staged(seq) {
			if err := c.Append(ctx, seq, crashEvent(seq)); err != nil {
				t.Fatal(err)
			}
		} else if err := stagedAppend(filepath.Join(dir, FileName), seq); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ack %d\n", seq)
	}
}

func stagedAppend(path string, seq int64) error {
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
	time.Sleep(2 * time.Millisecond)
	if _, err := f.WriteAt(line[cut:], end+int64(cut)); err != nil {
		return err
	}
	return unix.Fdatasync(fd)
}
