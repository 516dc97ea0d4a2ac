package compact

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// words make text that compresses as prose does, unlike random letters.
var words = strings.Fields(`the a to of and in that is for it on with as was this be at by not are from or have an
they which you one were all we her she there would their will when who him been has more if no out do so can what
up said about other into than its time only could new them man some these then two first may any like now my such
make over our even most me state after also made many did must before back see through way where get much go well
your know should down work year because come people just say each those take day good how long very own think file
tool call result model answer message owner thread window token summary cost provider usage latency seq error run
check read write list open close start stop send agent harness store frame compact log event turn prompt reply note`)

// realText is n bytes of words, the same for the same seed.
func realText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		w := words[int(float64(len(words))*r.Float64()*r.Float64())] // some words far more often
		b.WriteString(w)
		if r.IntN(12) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// realEvent is seq's event of a conversation as a turn writes it: a
// message, an answer calling a tool, its result, an answer, and so on,
// with the schema's fields filled as providers fill them.
func realEvent(seq int64) []byte {
	r := rand.New(rand.NewPCG(uint64(seq), 3))
	t := time.Unix(1767225600+seq*7, int64(r.IntN(1e9))).UTC()
	e := event.Event{Seq: seq, Time: t}
	switch seq % 4 {
	case 1:
		e.Type, e.ID = event.TypeMessage, fmt.Sprintf("tg-%d", 900000+seq)
		e.From, e.Owner, e.Connection = event.Sender{ID: "42", Name: "Ada"}, true, "telegram"
		e.Text = realText(r, 40+r.IntN(200))
		e.Head = t.Format("2006-01-02 15:04") + " · telegram · Ada"
		if seq == 1 {
			e.Thread = testThread
		}
	case 2, 0:
		e.Type, e.Text = event.TypeAnswer, realText(r, 100+r.IntN(400))
		e.Model, e.Provider = "claude-opus-5-5", "anthropic"
		e.ResponseID = fmt.Sprintf("msg_01%022d", r.Int64N(1e18))
		e.Usage = event.Usage{Input: 12000 + seq*40, Output: int64(80 + r.IntN(400)), CacheRead: 11000 + seq*38, CacheWrite: int64(r.IntN(900))}
		e.LatencyMS, e.Cost = int64(800+r.IntN(3000)), float64(r.IntN(3000))/1e5
		e.Window = &event.Window{Start: max(1, seq-60), StartTime: t.Add(-time.Hour), TokensBefore: seq * 150}
		if seq%4 == 2 {
			e.Calls = []event.Call{{ID: fmt.Sprintf("toolu_%020d", seq), Name: "read_file", Args: []byte(`{"path":"notes/todo.md"}`)}}
		}
	case 3:
		e.Type, e.CallID, e.Name = event.TypeResult, fmt.Sprintf("toolu_%020d", seq-1), "read_file"
		e.Text = realText(r, 100+r.IntN(500))
	}
	return event.Append(nil, &e)
}

// buildCompact writes n real events to a new compact conversation,
// without fdatasync, and returns its folder and what its folds did.
func buildCompact(tb testing.TB, n int64) (string, []FoldStats) {
	dir := tb.TempDir()
	var folds []FoldStats
	c, err := OpenOptions(dir, Options{Unsynced: true, Folded: func(s FoldStats) { folds = append(folds, s) }})
	if err != nil {
		tb.Fatal(err)
	}
	for seq := int64(1); seq <= n; seq++ {
		if err := c.Append(context.Background(), seq, realEvent(seq)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir, folds
}

func readLast32(c *Conversation) (int, error) {
	n := 0
	err := c.Read(context.Background(), store.FromLast, store.Backward, func(int64, []byte) bool {
		n++
		return n < 32
	})
	return n, err
}

// BenchmarkReadLast32 reads the last 32 events of conversations of 1,000
// and 100,000 real events, and reports what they take on the disk, the
// frames one read decompresses, and the peak resident memory of a process
// that only opens one and reads its last 32 events a thousand times.
func BenchmarkReadLast32(b *testing.B) {
	for _, n := range []int64{1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			dir, folds := buildCompact(b, n)
			var raw, framed int
			for _, f := range folds {
				raw, framed = raw+f.Raw, framed+f.Framed
			}
			zst, _ := os.Stat(filepath.Join(dir, FramesName))
			tail, _ := os.Stat(filepath.Join(dir, TailName))
			c := open(b, dir)
			readLast32(c)
			c.decoded = 0
			b.ReportAllocs()
			for b.Loop() {
				if got, err := readLast32(c); err != nil || got != 32 {
					b.Fatal(got, err)
				}
			}
			b.ReportMetric(float64(c.decoded)/float64(b.N), "frames/op")
			b.ReportMetric(float64(zst.Size()+tail.Size())/float64(n), "disk-B/event")
			b.ReportMetric(float64(raw)/float64(framed), "ratio")
			b.ReportMetric(peakRSS(b, dir), "peak-RSS-MiB")
		})
	}
}

// peakRSS runs this test binary again to read dir's last 32 events a
// thousand times, and returns its peak resident memory.
func peakRSS(b *testing.B, dir string) float64 {
	cmd := storetest.Child("TestReadChild", childEnv+"=read", "LNK_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("the reader: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), " kB"), 64)
			return kb / 1024
		}
	}
	b.Fatalf("the reader said %q", out)
	return 0
}

// TestReadChild is peakRSS's reader: run alone, it skips.
func TestReadChild(t *testing.T) {
	if os.Getenv(childEnv) != "read" {
		t.Skip("a child of BenchmarkReadLast32")
	}
	c := open(t, os.Getenv("LNK_DIR"))
	for range 1000 {
		if got, err := readLast32(c); err != nil || got != 32 {
			t.Fatal(got, err)
		}
	}
	f, _ := os.Open("/proc/self/status")
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmHWM:") {
			fmt.Println(sc.Text())
		}
	}
}

// BenchmarkAppend appends real events with fdatasync each, a fold every
// 32, on a disk and on tmpfs (storetest.BenchAppendDisks).
func BenchmarkAppend(b *testing.B) {
	storetest.BenchAppendDisks(b, func(b *testing.B, dir string) store.Conversation { return open(b, dir) }, realEvent, 4096)
}

// BenchmarkFold compresses 32 real events into a frame at level 19, as a
// fold does, and reports the frame's bytes per event.
func BenchmarkFold(b *testing.B) {
	var lines []byte
	for seq := int64(101); seq <= 132; seq++ {
		lines = append(append(lines, realEvent(seq)...), '\n')
	}
	enc, err := encoders.get()
	if err != nil {
		b.Fatal(err)
	}
	defer encoders.put()
	var out []byte
	b.SetBytes(int64(len(lines)))
	b.ReportAllocs()
	for b.Loop() {
		out = enc.EncodeAll(lines, out[:0])
	}
	b.ReportMetric(float64(len(out)+SealSize)/32, "framed-B/event")
	b.ReportMetric(float64(len(lines))/32, "jsonl-B/event")
}

// BenchmarkEncoderMemory reports the heap one level-19 encoder holds once
// it has folded, and a decoder once it has read.
func BenchmarkEncoderMemory(b *testing.B) {
	var lines []byte
	for seq := int64(1); seq <= 32; seq++ {
		lines = append(append(lines, realEvent(seq)...), '\n')
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var encMiB, decMiB float64
	for b.Loop() {
		before := heap()
		enc, _ := newEncoder()
		frame := enc.EncodeAll(lines, nil)
		encMiB = float64(heap()-before) / (1 << 20)
		runtime.KeepAlive(enc)
		enc.Close()
		before = heap()
		dec, _ := newDecoder()
		if _, err := dec.DecodeAll(frame, nil); err != nil {
			b.Fatal(err)
		}
		decMiB = float64(heap()-before) / (1 << 20)
		runtime.KeepAlive(dec)
		dec.Close()
	}
	b.ReportMetric(encMiB, "encoder-MiB")
	b.ReportMetric(decMiB, "decoder-MiB")
}

// TestReadLast32DecodesLittle checks a read of the last 32 events
// decompresses one frame, or two when the tail holds some of them, and
// allocates nothing once warm.
func TestReadLast32DecodesLittle(t *testing.T) {
	for _, n := range []int64{1000, 1010} {
		dir, _ := buildCompact(t, n)
		c := open(t, dir)
		readLast32(c)
		c.decoded = 0
		allocs := testing.AllocsPerRun(50, func() {
			if got, err := readLast32(c); err != nil || got != 32 {
				t.Fatal(got, err)
			}
		})
		if per := float64(c.decoded) / 51; per > 2 {
			t.Errorf("events=%d: %.1f frames decompressed per read of the last 32", n, per)
		}
		if allocs > 0 && !raceOn { // the race detector changes allocation counts
			t.Errorf("events=%d: reading the last 32 allocates %v times", n, allocs)
		}
		c.decoded = 0
		c.Read(context.Background(), 1, store.Forward, func(int64, []byte) bool { return false })
		if c.decoded != 1 {
			t.Errorf("events=%d: reading seq 1 decompressed %d frames", n, c.decoded)
		}
	}
}
