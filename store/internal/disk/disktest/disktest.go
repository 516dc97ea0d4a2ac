// Package disktest crashes and fails a store kept in files, on a
// disk.Mem: a seeded script of appends is stopped at every counted
// operation of the filesystem, and the conversation that survives is
// checked against what Append acknowledged.
//
// The script is a conversation's: odd seqs are messages, even seqs their
// answers. On a store that can (store.Deferred), a message is appended
// deferred, without its sync, and its answer's Append makes both durable,
// as a turn does; so images are taken between a message written and its
// answer's sync, and a crash there may lose the message, never an
// acknowledged event.
//
// The invariants checked, on every image and after every fault: each
// event acknowledged (its Append, or an Append after it, returned nil) is
// there byte for byte; seqs run from 1
// with no gap; no event is there that was never appended; the
// conversation takes the next Append, and the same bytes again at its
// last seq. The faults include failed fdatasyncs of both kinds a Mem
// makes: dropping what they were to make durable, and keeping it readable
// but never durable, as Linux does.
package disktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/disk"
	"lnk.dev/linkharness/store/storetest"
)

// Open opens the conversation kept in the folder dir of fsys. The folder
// exists. A Conversation it returns is closed before the next is opened.
type Open func(fsys disk.FS, dir string) (store.Conversation, error)

// Dir is the folder the conversation is kept in on each Mem.
const Dir = "/home/chats/t"

// Options change a run. The zero value is the default.
type Options struct {
	// Events is how many events the script appends; 0 is 100.
	Events int
	// SkipSyncDir makes SyncDir do nothing (disk.Mem.SkipSyncDir), so a
	// test shows that a missing folder sync is caught.
	SkipSyncDir bool
}

func (o Options) events() int {
	if o.Events == 0 {
		return 100
	}
	return o.Events
}

// reopenEvery is how many appends the script makes on one Conversation
// before it closes it and opens another, as an agent that goes idle does.
const reopenEvery = 10

// Script returns n events drawn from seed, seq i+1 at index i, of mixed
// sizes: most of a few hundred bytes, some of a few KiB, a few of up to
// 48 KiB, so reads cross the stores' buffers and a crash image stays
// cheap to read whole. Their text holds bytes a
// re-encoding would change.
func Script(seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const alphabet = "abcdefghijklmnopqrstuvwxyz <>&\"\\\té"
	out := make([][]byte, n)
	for i := range out {
		var size int
		switch p := r.IntN(100); {
		case p < 80:
			size = 10 + r.IntN(300)
		case p < 96:
			size = 1<<10 + r.IntN(4<<10)
		default:
			size = 8<<10 + r.IntN(40<<10)
		}
		var b strings.Builder
		for b.Len() < size {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		e := event.Event{
			Seq:  int64(i + 1),
			Time: time.Unix(1767225600+int64(i), 0).UTC(),
			Type: event.TypeMessage,
			Text: b.String(),
		}
		if i == 0 {
			e.Thread = "t"
		}
		out[i] = event.Append(nil, &e)
	}
	return out
}

// appendOne appends seq, script[seq-1], as the script's turn does:
// deferred when seq is a message (odd) and c can, else durably. It says
// whether the Append acknowledged it, and with it every event before.
func appendOne(ctx context.Context, c store.Conversation, script [][]byte, seq int) (acked bool, err error) {
	if d, ok := c.(store.Deferred); ok && seq%2 == 1 {
		return false, d.AppendDeferred(ctx, int64(seq), script[seq-1])
	}
	return true, c.Append(ctx, int64(seq), script[seq-1])
}

// Report is what CrashImages found.
type Report struct {
	Images     int               // crash images checked, torn ones among them
	Torn       int               // of them, images of CrashTorn that differ from Crash's
	Deferred   int               // of them, images taken after a message was appended deferred and before its answer's Append returned
	Kinds      map[disk.Kind]int // the operations after which images were taken, by kind
	Restarts   int               // crashes the script went on from
	Violations []string          // what was wrong, one per image at most
}

// Crash runs CrashImages and fails t for each violation, and if the store
// appends deferred but no image was taken while a message waited for its
// answer's sync.
func Crash(t *testing.T, open Open) {
	t.Helper()
	r := CrashImages(t, open, Options{})
	for _, v := range r.Violations {
		t.Error(v)
	}
	if r.Deferred == 0 && deferring(t, open) {
		t.Error("no crash image was taken between a message appended deferred and its answer's sync")
	}
}

// deferring says whether open's conversations append deferred.
func deferring(t testing.TB, open Open) bool {
	m := disk.NewMem()
	if err := m.MkdirAll(Dir); err != nil {
		t.Fatal(err)
	}
	c, err := open(m, Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, ok := c.(store.Deferred)
	return ok
}

// Conformance runs storetest's suite with the conversations that open
// makes kept on a disk.Mem, one per store, so the filesystem the crash and
// fault tests use is known to keep them as the disk does.
func Conformance(t *testing.T, open Open) {
	mems := make(map[string]*disk.Mem)
	storetest.Run(t, func(t *testing.T, root string) store.Driver {
		m := mems[root]
		if m == nil {
			m = disk.NewMem()
			mems[root] = m
		}
		return storetest.Folders(root, func(dir string) (store.Conversation, error) {
			if err := m.MkdirAll(dir); err != nil {
				return nil, err
			}
			return open(m, dir)
		})
	})
}

// restarts is how many times the script crashes in the middle of an
// Append and goes on from the torn image, as a restarted program would.
const restarts = 3

// CrashImages runs the script on a Mem and, before the first counted
// operation and after every one (every open, write, truncate, sync,
// syncfs and folder sync; the image after one is the image before the
// next), takes the crash images of Crash and CrashTorn and checks each:
// opens the conversation on it and checks the invariants against the
// events acknowledged by then. Three times, after the first write of an
// Append, the script goes on from that torn image instead, as a restarted
// program whose caller sends again what was not answered: from the event
// after the last the image holds, so images are taken of a store cutting
// a torn tail too.
// It logs the counts and returns them with what it found wrong; it fails
// t only when the script cannot run.
func CrashImages(t testing.TB, open Open, opts Options) Report {
	t.Helper()
	script := Script(storetest.Seed(t), opts.events())
	ctx := context.Background()
	m := disk.NewMem()
	if err := m.MkdirAll(Dir); err != nil {
		t.Fatal(err)
	}
	m.SkipSyncDir(opts.SkipSyncDir)
	r := Report{Kinds: make(map[disk.Kind]int)}
	// written is the last seq appended deferred whose AppendDeferred
	// returned: past acked, its message waits for its answer's sync.
	var acked, tried, written int
	check := func(img *disk.Mem, after string) {
		r.Images++
		if written > acked {
			r.Deferred++
		}
		if err := verify(ctx, img, open, script, acked, tried); err != nil {
			r.Violations = append(r.Violations, fmt.Sprintf("crash image %s, with %d events acknowledged: %v", after, acked, err))
		}
	}
	// restartAt are the seqs whose Append crashes after its first write;
	// torn is that image, once taken.
	restartAt := make(map[int]bool)
	for i := 1; i <= restarts; i++ {
		restartAt[i*len(script)/(restarts+1)+1] = true
	}
	var torn *disk.Mem
	onOp := func(op disk.Op) {
		r.Kinds[op.Kind]++
		after := fmt.Sprintf("after operation %d (%v %s)", op.N, op.Kind, op.Path)
		check(m.Crash(), after)
		if m.Torn() {
			r.Torn++
			check(m.CrashTorn(), "torn "+after)
			if op.Kind == disk.OpWrite && restartAt[tried] && torn == nil {
				torn = m.CrashTorn() // check changed the one it had
			}
		}
	}
	check(m.Crash(), "before the first operation")
	m.OnOp(onOp)
	c, err := open(m, Dir)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	for i := 0; i < len(script); i++ {
		seq := i + 1
		tried = seq
		ok, err := appendOne(ctx, c, script, seq)
		if err != nil {
			t.Fatalf("append seq %d: %v", seq, err)
		}
		if torn != nil {
			// The program died in that Append: go on from what it left,
			// from the event after the last it holds.
			delete(restartAt, tried)
			c.Close()
			m.OnOp(nil)
			m, torn = torn, nil
			m.SkipSyncDir(opts.SkipSyncDir)
			m.OnOp(onOp)
			r.Restarts++
			if c, err = open(m, Dir); err != nil {
				t.Fatalf("open after a crash: %v", err)
			}
			last, err := c.Last(ctx)
			if err != nil || last < int64(acked) {
				t.Fatalf("after a crash in seq %d the last is %d (%v), %d acknowledged", seq, last, err, acked)
			}
			i = int(last) - 1
			continue
		}
		if !ok {
			written = seq
		} else {
			acked = seq
		}
		if ok && seq%reopenEvery == 0 {
			if c, err = reopen(c, m, open); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.OnOp(nil)
	c.Close()
	t.Logf("%d crash images of %d appends checked, %d of them torn, %d while a message waited for its answer's sync, after operations %v, with %d restarts; %d violations",
		r.Images, len(script), r.Torn, r.Deferred, r.Kinds, r.Restarts, len(r.Violations))
	return r
}

// reopen closes c and opens the conversation again on fsys.
func reopen(c store.Conversation, fsys disk.FS, open Open) (store.Conversation, error) {
	if err := c.Close(); err != nil {
		return nil, fmt.Errorf("close: %w", err)
	}
	c, err := open(fsys, Dir)
	if err != nil {
		return nil, fmt.Errorf("open again: %w", err)
	}
	return c, nil
}

// verify opens the conversation on fsys and checks that it holds
// script[:n] byte for byte for some n from acked to tried, takes the same
// bytes again at seq n, and takes seq n+1. It closes what it opened.
func verify(ctx context.Context, fsys disk.FS, open Open, script [][]byte, acked, tried int) error {
	c, err := open(fsys, Dir)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer c.Close()
	n, err := holds(ctx, c, script, acked, tried)
	if err != nil {
		return err
	}
	if n > 0 {
		if err := c.Append(ctx, int64(n), script[n-1]); err != nil {
			return fmt.Errorf("seq %d's bytes again: %w", n, err)
		}
	}
	if n < len(script) {
		if err := c.Append(ctx, int64(n+1), script[n]); err != nil {
			return fmt.Errorf("the next append, seq %d: %w", n+1, err)
		}
		if last, err := c.Last(ctx); err != nil || last != int64(n+1) {
			return fmt.Errorf("after appending seq %d the last is %d (%v)", n+1, last, err)
		}
	}
	return nil
}

// holds checks that c holds script[:n] for some n from acked to tried, and
// returns n.
func holds(ctx context.Context, c store.Conversation, script [][]byte, acked, tried int) (int, error) {
	var n int
	var bad error
	err := c.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		switch {
		case seq != int64(n+1):
			bad = fmt.Errorf("seq %d after seq %d", seq, n)
		case seq > int64(tried):
			bad = fmt.Errorf("seq %d, never appended (%d tried)", seq, tried)
		case string(ev) != string(script[seq-1]):
			bad = fmt.Errorf("seq %d holds other bytes than were appended (%d bytes, %d appended)", seq, len(ev), len(script[seq-1]))
		default:
			n++
			return true
		}
		return false
	})
	if bad != nil {
		return n, bad
	}
	if err != nil && !(n == 0 && errors.Is(err, store.ErrNotFound)) {
		return n, fmt.Errorf("read after seq %d: %w", n, err)
	}
	if n < acked {
		return n, fmt.Errorf("holds %d events, %d were acknowledged", n, acked)
	}
	last, err := c.Last(ctx)
	if err != nil || last != int64(n) {
		return n, fmt.Errorf("last is %d (%v), %d events read", last, err, n)
	}
	return n, nil
}

// FaultReport is what FaultLoop found.
type FaultReport struct {
	// Dropped counts the runs whose failed fdatasyncs drop what was
	// written since the last good one; Kept the runs made again where
	// they keep it readable, never durable (disk.Plan.Keep).
	Dropped, Kept FaultCounts
	// Violations is what was wrong, one per run at most.
	Violations []string
}

// FaultCounts are the counts of the runs of one way a failed fdatasync
// leaves a file.
type FaultCounts struct {
	Runs     int               // runs of the script: one per operation, error and plan
	Faults   map[disk.Kind]int // faults injected, by kind of operation
	Failed   int               // Appends that returned an error
	Survived int               // Appends that met a fault and returned nil, each found durable
	Retried  int               // failed Appends made again once the faults cleared
}

func (c FaultCounts) String() string {
	total := 0
	for _, n := range c.Faults {
		total += n
	}
	return fmt.Sprintf("%d runs, %d faults injected (%v), %d appends failed and %d retried, %d appends met a fault and were durable",
		c.Runs, total, c.Faults, c.Failed, c.Retried, c.Survived)
}

// Faults runs FaultLoop and fails t for each violation, and if no
// fdatasync failed in either way.
func Faults(t *testing.T, open Open) {
	t.Helper()
	r := FaultLoop(t, open, Options{})
	for _, v := range r.Violations {
		t.Error(v)
	}
	if r.Dropped.Faults[disk.OpSync] == 0 || r.Kept.Faults[disk.OpSync] == 0 {
		t.Errorf("%d fdatasyncs failed dropping their bytes and %d keeping them; want some of each", r.Dropped.Faults[disk.OpSync], r.Kept.Faults[disk.OpSync])
	}
}

// The errors injected: EIO plainly, ENOSPC with a failing write writing
// half its bytes first.
var faults = []disk.Plan{{Err: syscall.EIO}, {Err: syscall.ENOSPC, Short: true}}

// FaultLoop runs the script once on a Mem to count its operations, then,
// for every operation k of that run, for EIO and ENOSPC, runs it again on
// a new Mem failing operation k once, and again failing every operation
// from k on. Each run appends until an Append fails, then checks: an
// Append that met a fault and returned nil had its event durable (on a
// crash image taken then); the crash image of the run holds every
// acknowledged event; once the faults are cleared the failed Append made
// again on the same Conversation returns nil; and a crash image and a
// fresh Conversation on the Mem hold it all and take the next Append.
//
// A failed fdatasync drops what it was to make durable in those runs.
// Each run in which one failed is made again with the Mem keeping it
// readable instead, as Linux does, but never durable unless written again
// (disk.Plan.Keep): a store that finds its line there after the failure
// and only syncs it again acknowledges what a crash loses. (A run with no
// failed fdatasync is the same run in both ways.)
//
// It does all that twice: from an empty folder, and from the torn image of
// a crash in the first write of the middle event, going on with that
// event, so faults land in the cut of a torn tail too. It logs the counts
// and returns them with what it found wrong; it fails t only when the
// script cannot run.
func FaultLoop(t testing.TB, open Open, opts Options) FaultReport {
	t.Helper()
	script := Script(storetest.Seed(t), opts.events())
	ctx := context.Background()
	r := FaultReport{
		Dropped: FaultCounts{Faults: make(map[disk.Kind]int)},
		Kept:    FaultCounts{Faults: make(map[disk.Kind]int)},
	}
	empty := disk.NewMem()
	if err := empty.MkdirAll(Dir); err != nil {
		t.Fatal(err)
	}
	ops := r.loop(t, ctx, open, script, empty, 0, "from an empty folder")
	mid := len(script) / 2
	torn := tornAt(t, ctx, open, script, mid+1)
	ops += r.loop(t, ctx, open, script, torn, mid, fmt.Sprintf("from a crash in seq %d's first write", mid+1))
	t.Logf("over %d operations: a failed fdatasync dropping its bytes: %v; keeping them readable: %v; %d violations",
		ops, r.Dropped, r.Kept, len(r.Violations))
	return r
}

// tornAt returns the torn crash image taken after the first write of the
// Append of seq.
func tornAt(t testing.TB, ctx context.Context, open Open, script [][]byte, seq int) *disk.Mem {
	t.Helper()
	m := disk.NewMem()
	if err := m.MkdirAll(Dir); err != nil {
		t.Fatal(err)
	}
	var torn *disk.Mem
	armed := false
	m.OnOp(func(op disk.Op) {
		if armed && torn == nil && op.Kind == disk.OpWrite && m.Torn() {
			torn = m.CrashTorn()
		}
	})
	if c, failed, _, err := appendAll(ctx, m, open, script[:seq-1], 0, nil); err != nil || failed != 0 {
		t.Fatalf("the script up to seq %d: seq %d: %v", seq-1, failed, err)
	} else {
		// The image is to hold seqs 1 to seq-1: the last, a message
		// maybe, is made durable.
		if d, ok := c.(store.Deferred); ok {
			if err := d.Commit(ctx); err != nil {
				t.Fatalf("commit seq %d: %v", seq-1, err)
			}
		}
		c.Close()
	}
	armed = true
	if c, failed, _, err := appendAll(ctx, m, open, script[:seq], seq-1, nil); err != nil || failed != 0 {
		t.Fatalf("seq %d: %v", seq, err)
	} else {
		c.Close()
	}
	if torn == nil {
		t.Fatalf("no write of seq %d left a torn crash image", seq)
	}
	return torn
}

// loop runs the script from seq from+1 on copies of start, which holds
// seqs 1 to from: once to count its operations, then failing each, and
// returns how many there were.
func (r *FaultReport) loop(t testing.TB, ctx context.Context, open Open, script [][]byte, start *disk.Mem, from int, where string) int {
	t.Helper()
	m := start.Crash()
	kinds := []disk.Kind{0}
	m.OnOp(func(op disk.Op) { kinds = append(kinds, op.Kind) })
	if c, failed, _, err := appendAll(ctx, m, open, script, from, nil); err != nil || failed != 0 {
		t.Fatalf("the script without faults, %s: seq %d: %v", where, failed, err)
	} else {
		c.Close()
	}
	for k := 1; k < len(kinds); k++ {
		for _, p := range faults {
			for _, every := range []bool{false, true} {
				p.At, p.Every = k, every
				mode := "once"
				if every {
					mode = "from then on"
				}
				synced, err := r.Dropped.run(ctx, open, script, start.Crash(), from, p)
				if err != nil {
					r.Violations = append(r.Violations, fmt.Sprintf("%s, operation %d (%v) failing with %v %s: %v", where, k, kinds[k], p.Err, mode, err))
				}
				if !synced {
					continue
				}
				p.Keep = true
				if _, err := r.Kept.run(ctx, open, script, start.Crash(), from, p); err != nil {
					r.Violations = append(r.Violations, fmt.Sprintf("%s, operation %d (%v) failing with %v %s, a failed fdatasync keeping its bytes readable: %v", where, k, kinds[k], p.Err, mode, err))
				}
				p.Keep = false
			}
		}
	}
	return len(kinds) - 1
}

// appendAll appends script[from:] on m until an Append (or an open)
// fails, and returns the last Conversation, open, the seq that failed, 0
// if none did, and the last seq acknowledged. survived is called after an
// Append that met a fault and acknowledged its event.
func appendAll(ctx context.Context, m *disk.Mem, open Open, script [][]byte, from int, survived func(seq int) error) (c store.Conversation, failed, acked int, err error) {
	acked = from
	c, err = open(m, Dir)
	if err != nil {
		return nil, from + 1, acked, err
	}
	for i := from; i < len(script); i++ {
		seq := i + 1
		before := m.Faults()
		ok, err := appendOne(ctx, c, script, seq)
		if err != nil {
			return c, seq, acked, err
		}
		if !ok {
			continue
		}
		acked = seq
		if m.Faults() > before && survived != nil {
			if err := survived(seq); err != nil {
				return c, 0, acked, err
			}
		}
		if seq%reopenEvery == 0 {
			if c, err = reopen(c, m, open); err != nil {
				return nil, seq + 1, acked, err
			}
		}
	}
	return c, 0, acked, nil
}

// errSurvived marks a violation found by survived, not an Append's error.
type errSurvived struct{ error }

// run runs the script from seq from+1 on m, which holds seqs 1 to from,
// failing operations as p says, and checks what it left. It says whether
// an fdatasync failed.
func (r *FaultCounts) run(ctx context.Context, open Open, script [][]byte, m *disk.Mem, from int, p disk.Plan) (synced bool, err error) {
	r.Runs++
	m.Fail(p)
	m.OnOp(func(op disk.Op) {
		if op.Fault {
			r.Faults[op.Kind]++
			synced = synced || op.Kind == disk.OpSync
		}
	})
	err = r.check(ctx, open, script, m, from)
	return synced, err
}

// check runs the script from seq from+1 on m, which holds seqs 1 to from
// and has its faults planned, and checks what it left.
func (r *FaultCounts) check(ctx context.Context, open Open, script [][]byte, m *disk.Mem, from int) error {
	c, failed, acked, err := appendAll(ctx, m, open, script, from, func(seq int) error {
		if err := verify(ctx, m.Crash(), open, script, seq, seq); err != nil {
			return errSurvived{fmt.Errorf("seq %d was acknowledged after a fault, and a crash image then: %w", seq, err)}
		}
		r.Survived++
		return nil
	})
	if es := (errSurvived{}); errors.As(err, &es) {
		if c != nil {
			c.Close()
		}
		return es.error
	}
	tried := len(script)
	if failed > 0 {
		r.Failed++
		tried = failed
	}
	if verr := verify(ctx, m.Crash(), open, script, acked, tried); verr != nil {
		return fmt.Errorf("after seq %d failed (%v), a crash image: %w", failed, err, verr)
	}
	m.Fail(disk.Plan{})
	if failed > 0 {
		r.Retried++
		if c == nil {
			// The open after an Append failed: open again.
			if c, err = open(m, Dir); err != nil {
				return fmt.Errorf("open once the faults cleared: %w", err)
			}
		}
		// The caller sends again what was not acknowledged, from the
		// event after the last acknowledged to the one that failed: the
		// same bytes again where the conversation still holds them
		// (they may be there and not on the disk), written anew where a
		// failed sync took them, a message with its answer.
		for seq := acked + 1; seq <= failed; seq++ {
			if _, err := appendOne(ctx, c, script, seq); err != nil {
				c.Close()
				return fmt.Errorf("seq %d made again once the faults cleared: %w", seq, err)
			}
		}
		if d, ok := c.(store.Deferred); ok {
			if err := d.Commit(ctx); err != nil {
				c.Close()
				return fmt.Errorf("seq %d committed once the faults cleared: %w", failed, err)
			}
		}
		acked = failed
	}
	if c != nil {
		c.Close()
	}
	if err := verify(ctx, m.Crash(), open, script, acked, acked); err != nil {
		return fmt.Errorf("once the faults cleared, a crash image: %w", err)
	}
	if err := verify(ctx, m, open, script, acked, acked); err != nil {
		return fmt.Errorf("once the faults cleared, opened again: %w", err)
	}
	return nil
}
