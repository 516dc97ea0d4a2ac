package log

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"lnk.dev/linkharness/store/internal/disk"
)

// turns is how many turns run at once in the group commit's test and
// benchmark.
const turns = 64

// TestGroupCommit runs 64 turns at once, each on a conversation of its
// own on one filesystem: a message appended deferred, then its answer.
// The first answer's fdatasync is held until every other turn waits for
// a sync, so all of them share the next one: 64 messages, 2 syncs. Every
// event is on the disk after, in a crash image of it.
func TestGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := disk.NewMem()
		var syncs, syncfs atomic.Int64
		first, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		m.OnOp(func(op disk.Op) {
			switch op.Kind {
			case disk.OpSync:
				syncs.Add(1)
				once.Do(func() { close(first); <-release })
			case disk.OpSyncFS:
				syncfs.Add(1)
			}
		})
		dir := func(i int) string { return fmt.Sprintf("/home/chats/t%d", i) }
		var wg sync.WaitGroup
		errs := make([]error, turns)
		for i := range turns {
			if err := m.MkdirAll(dir(i)); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { errs[i] = turn(ctx, m, dir(i)) })
		}
		<-first
		synctest.Wait() // every other turn waits for a sync
		close(release)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
		}
		st := m.Committer().Stats()
		t.Logf("%d messages: %d fdatasync, %d syncfs; the committer made %d syncs for %d commits", turns, syncs.Load(), syncfs.Load(), st.Syncs, st.Commits)
		if n := syncs.Load() + syncfs.Load(); n >= turns || n != 2 {
			t.Errorf("%d messages took %d syncs; want 2: one alone, then one for the rest", turns, n)
		}
		img := m.Crash()
		for i := range turns {
			c, err := OpenOptions(dir(i), Options{FS: img})
			if err != nil {
				t.Fatal(err)
			}
			if last, err := c.Last(ctx); err != nil || last != 2 {
				t.Errorf("conversation %d after a crash: last %d (%v), want 2", i, last, err)
			}
			c.Close()
		}
	})
}

// turn appends a message deferred and its answer to the conversation in
// dir of fsys.
func turn(ctx context.Context, fsys disk.FS, dir string) error {
	c, err := OpenOptions(dir, Options{FS: fsys})
	if err != nil {
		return err
	}
	defer c.Close()
	last, err := c.Last(ctx)
	if err != nil {
		return err
	}
	if err := c.AppendDeferred(ctx, last+1, typicalEvent(last+1)); err != nil {
		return err
	}
	return c.Append(ctx, last+2, typicalEvent(last+2))
}

// BenchmarkGroupCommit runs turns (a message appended deferred, then its
// answer) on the real filesystem, each goroutine on a conversation of its
// own: one at a time, and 64 at once. syncs/msg is the fdatasync and
// syncfs calls the process's Committer made per message.
func BenchmarkGroupCommit(b *testing.B) {
	for _, n := range []int{1, turns} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			root := b.TempDir()
			var next atomic.Int64
			before := disk.OS.Committer().Stats()
			b.ReportAllocs()
			work := func(more func() bool) {
				ctx := context.Background()
				dir := filepath.Join(root, fmt.Sprint(next.Add(1)))
				if err := os.Mkdir(dir, 0o700); err != nil {
					b.Error(err)
					return
				}
				c, err := Open(dir)
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				for seq := int64(1); more(); seq += 2 {
					if err := c.AppendDeferred(ctx, seq, typicalEvent(seq)); err != nil {
						b.Error(err)
						return
					}
					if err := c.Append(ctx, seq+1, typicalEvent(seq+1)); err != nil {
						b.Error(err)
						return
					}
				}
			}
			if n == 1 {
				i := 0
				work(func() bool { i++; return i <= b.N })
			} else {
				// RunParallel runs GOMAXPROCS × parallelism goroutines.
				b.SetParallelism(max(1, n/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) { work(pb.Next) })
			}
			after := disk.OS.Committer().Stats()
			b.ReportMetric(float64(after.Syncs-before.Syncs)/float64(b.N), "syncs/msg")
		})
	}
}
