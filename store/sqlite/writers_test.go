package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/sqlite"
)

const writerEnv = "LNK_SQLITE_WRITER"

// TestTwoWriters has two processes take turns on one conversation in one
// file as the harness does: each turn holds the lease, appends a message
// and its answer after the last event, and lets the lease go. No seq is
// written twice, no turn's events are split by another's, and the tokens
// only grow.
func TestTwoWriters(t *testing.T) {
	const procs, turns = 2, 40
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for w := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriterChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), writerEnv+"="+strconv.Itoa(w), "LNK_PATH="+path, "LNK_TURNS="+strconv.Itoa(turns))
		cmd.Stderr = os.Stderr
		out := new(bytes.Buffer)
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	type turn struct{ w, seq int }
	tokens := map[int64]turn{}
	for w, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", w, err, outs[w])
		}
		sc := bufio.NewScanner(outs[w])
		var last int64
		n := 0
		for sc.Scan() {
			var token int64
			var seq int
			if _, err := fmt.Sscanf(sc.Text(), "turn %d %d", &token, &seq); err != nil {
				continue
			}
			if token <= last {
				t.Fatalf("writer %d: token %d after %d", w, token, last)
			}
			if o, ok := tokens[token]; ok {
				t.Fatalf("token %d given to writer %d and writer %d", token, o.w, w)
			}
			tokens[token], last = turn{w, seq}, token
			n++
		}
		if n != turns {
			t.Fatalf("writer %d took %d turns, want %d:\n%s", w, n, turns, outs[w])
		}
	}
	d, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, _ := d.Open("race")
	var got [][]byte
	err = c.Read(context.Background(), 1, false, func(seq int64, ev []byte) bool {
		if seq != int64(len(got)+1) {
			t.Fatalf("seq %d after %d", seq, len(got))
		}
		got = append(got, bytes.Clone(ev))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*procs*turns {
		t.Fatalf("%d events, want %d", len(got), 2*procs*turns)
	}
	for _, tu := range tokens {
		seq := int64(tu.seq)
		if !bytes.Equal(got[seq-1], writerEvent(tu.w, seq, store.TypeMessage)) ||
			!bytes.Equal(got[seq], writerEvent(tu.w, seq+1, store.TypeAnswer)) {
			t.Fatalf("writer %d's turn at seq %d is not its message and answer", tu.w, seq)
		}
	}
}

func writerEvent(w int, seq int64, typ string) []byte {
	e := store.Event{Seq: seq, Time: time.Unix(1767225600, 0).UTC(), Type: typ, Text: fmt.Sprintf("writer %d", w)}
	return store.AppendEvent(nil, &e)
}

// TestWriterChild is TestTwoWriters's writer: run alone, it skips.
func TestWriterChild(t *testing.T) {
	w, err := strconv.Atoi(os.Getenv(writerEnv))
	if err != nil {
		t.Skip("a child of TestTwoWriters")
	}
	turns, _ := strconv.Atoi(os.Getenv("LNK_TURNS"))
	d, err := sqlite.Open(os.Getenv("LNK_PATH"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	for range turns {
		c, _ := d.Open("race")
		held, release, err := store.HoldLease(ctx, c, "writer", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		last, err := held.Last(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, typ := range []string{store.TypeMessage, store.TypeAnswer} {
			seq := last + 1 + int64(i)
			if err := held.Append(ctx, seq, writerEvent(w, seq, typ)); err != nil {
				t.Fatalf("turn at %d: %v", last+1, err)
			}
		}
		fmt.Printf("turn %d %d\n", held.(*store.Leased).Token(), last+1)
		release()
	}
}
