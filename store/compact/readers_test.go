package compact

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadersWhileFolding folds every 2 events while readers read again
// and again, each with its own Conversation on the folder: every read is a
// gapless run of the events without duplicates, and reaches at least the
// last event acknowledged before it started.
func TestReadersWhileFolding(t *testing.T) {
	reads := int64(10000)
	if testing.Short() || raceOn {
		reads = 1000
	}
	dir := t.TempDir()
	w := open(t, dir)
	w.foldEvents = 2
	ctx := context.Background()
	var acked atomic.Int64
	if err := w.Append(ctx, 1, makeEvent(1, 200)); err != nil {
		t.Fatal(err)
	}
	acked.Store(1)
	var done atomic.Int64
	// Every 8th read asks for an append; the writer appends once per ask,
	// so appends keep pace with reads however fast either runs.
	ask := make(chan struct{}, 1)
	stop := make(chan struct{})
	var writer, readersWG sync.WaitGroup
	errs := make(chan error, 8)
	writer.Add(1)
	go func() {
		defer writer.Done()
		for seq := int64(2); ; seq++ {
			select {
			case <-stop:
				return
			case <-ask:
			}
			if err := w.Append(ctx, seq, makeEvent(seq, 200)); err != nil {
				errs <- err
				return
			}
			acked.Store(seq)
		}
	}()
	const readers = 3
	for r := range readers {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			c, err := Open(dir)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				n := done.Add(1)
				if n > reads {
					return
				}
				if n%8 == 0 {
					select {
					case ask <- struct{}{}:
					default: // an ask is already waiting
					}
				}
				if err := readOnce(c, i+r, acked.Load()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	readersWG.Wait()
	close(stop)
	writer.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d reads while %d events were appended, a fold every 2", reads, acked.Load())
}

// readOnce reads the conversation one of four ways and checks what it
// got: one read in ten forward from 1 to the end, one back from the end to
// 1, and the others back from the end 40 events or forward from 40 before
// the end, as turns read.
func readOnce(c *Conversation, i int, floor int64) error {
	ctx := context.Background()
	var (
		want, step, first int64
		n, limit          int
		reverse           bool
		bad               error
	)
	switch way := i % 10; {
	case way == 0:
		first, step = 1, 1
	case way == 5:
		reverse, step = true, -1
	case way%2 == 1:
		reverse, step, limit = true, -1, 40
	default:
		first, step = max(1, floor-40), 1
	}
	want = first
	err := c.Read(ctx, first, reverse, func(seq int64, ev []byte) bool {
		if want == 0 {
			want = seq // a reverse read starts at the last
			if seq < floor {
				bad = fmt.Errorf("a reverse read started at %d; %d was acknowledged before", seq, floor)
				return false
			}
		}
		if seq != want || !bytes.Equal(ev, makeEvent(seq, 200)) {
			bad = fmt.Errorf("read %d (way %d) handed out seq %d where %d was due", i, i%10, seq, want)
			return false
		}
		want += step
		n++
		return limit == 0 || n < limit
	})
	if err != nil {
		return fmt.Errorf("read %d (way %d): %w", i, i%10, err)
	}
	if bad != nil {
		return bad
	}
	if step == 1 && want-1 < floor {
		return fmt.Errorf("read %d (way %d) ended at %d; %d was acknowledged before it began", i, i%10, want-1, floor)
	}
	if reverse && limit == 0 && want != 0 {
		return fmt.Errorf("read %d read back to %d, not 1", i, want+1)
	}
	return nil
}
