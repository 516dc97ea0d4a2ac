package turn

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/loadgen/scripted"
)

// A turn waiting for its model's answer holds its message's text twice:
// in the window's event the request was made from, and in the prompt's
// message the warm conversation keeps for the next turn. Not in the
// request's body, which goes back once written, nor in the line it was
// encoded in, the log's last line or the caller's message: those made
// six more, nor a 64 KiB buffer for the answer's stream. The scripted
// model, in this process, holds one more of each request. Counted from
// the heap live after a collection, with 16 turns of 256 KiB messages
// waiting at once, their answers begun.
func TestTurnHoldsItsText(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory is counted live")
	}
	const turns, size = 16, 256 << 10
	r, srv := newRunner(t, &scripted.Script{Rules: []scripted.Rule{{Match: "", Text: "words and then nothing", Chunks: 4, Stall: true, AfterChunks: 1}}})
	r.HTTP = &http.Client{Transport: &model.Transport{}}
	before := liveHeap()
	var began, done sync.WaitGroup
	began.Add(turns)
	for i := range turns {
		done.Go(func() {
			var once sync.Once
			// Each its own text, as a server's caller's, which the
			// caller no longer holds once the turn has it.
			text := strings.Repeat("word ", size/5)
			r.Message(context.Background(), fmt.Sprint("t", i), Message{ID: "1", Text: text}, func(string) { once.Do(began.Done) })
		})
	}
	began.Wait() // each turn has its answer's first words, and waits for more
	held := liveHeap() - before
	srv.Close() // the answers end there
	done.Wait()
	copies := float64(held) / turns / size
	t.Logf("%d turns waiting hold %.1f MB: %.2f copies of the text each, the model's one included", turns, float64(held)/1e6, copies)
	if copies > 3.5 {
		t.Errorf("a turn waiting for its model holds %.2f copies of its message's text (the model's one included), want at most 3.5", copies)
	}
}

// liveHeap is the heap live after a collection, pools emptied.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
