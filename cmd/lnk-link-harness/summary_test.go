package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/event"
)

// summaryAsked tells a summary's request from an answer's: words of the
// request for it (harness/prompt's summaryAsk).
var summaryAsked = []byte("Write a summary of what leaves")

// The harness killed between an answer and its summary, 50 times: each
// time the model has the summary's request (held at a gate in this
// process, so the kill lands there every time, and is counted) and the
// caller already has the answer. After each kill the answer is in the
// conversation, no summary is, and the window's start is where it was; the
// next turn, in a new process, answers with that window and summarizes
// after it.
func TestKilledBeforeTheSummary(t *testing.T) {
	kills := 50
	if testing.Short() {
		kills = 5
	}
	h := startHarness(t, "", false)
	proxy := relay(t, strings.TrimPrefix(h.env[0], "LNK_MODEL_PROXY="))
	// The summary to hold: the one whose request quotes this message as
	// the first that stays (the turn's own, once nothing else can stay).
	var hold atomic.Value
	hold.Store("")
	held := make(chan struct{}, 1)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if q := hold.Load().(string); q != "" && bytes.Contains(body, summaryAsked) && bytes.Contains(body, []byte("\u201c"+q+"\u201d")) {
			held <- struct{}{}
			<-r.Context().Done() // until the harness is killed
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	h.cmd.Process.Kill()
	h.cmd.Wait()
	h.env = []string{"LNK_MODEL_PROXY=" + gate.URL}
	h.args = append(h.args, "--log-level", "debug")
	s := settings.Defaults()
	s.Window.Max, s.Window.MaxSet, s.Window.CompactAt = 2048, true, 0.001
	if err := settings.Write(filepath.Join(h.home, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	h.restart(t)
	// A first turn: nothing can leave yet.
	if _, err := h.message("t", "0", "the first message"); err != nil {
		t.Fatal(err)
	}
	landed := 0
	var after sent // the answer of the turn after the last kill, whose summary the next turn finds
	for i := 1; i <= kills+1; i++ {
		text := "a message before a kill, number " + strconv.Itoa(i)
		if i <= kills {
			hold.Store(text)
		}
		told := make(chan error, 1)
		var a sent
		go func() {
			var err error
			a, err = h.message("t", "k"+strconv.Itoa(i), text)
			told <- err
		}()
		if i <= kills {
			<-held
		}
		if err := <-told; err != nil {
			t.Fatalf("kill %d: the answer was not told before the summary was asked: %v", i, err)
		}
		// This turn began once the turn before had summarized: its
		// summary is written, right after its answer.
		ev := h.events(t, "t")
		if i > 1 {
			if s := ev[after.seq]; s.Type != event.TypeSummary || s.Through < after.seq-3 || s.Window.Start != s.Through+1 {
				t.Fatalf("kill %d: the turn after the last kill did not summarize: %+v", i-1, s)
			}
		}
		if i > kills {
			break
		}
		h.cmd.Process.Kill()
		h.cmd.Wait()
		landed++
		h.restart(t)
		ev = h.events(t, "t")
		last := ev[len(ev)-1]
		if last.Type != event.TypeAnswer || last.Seq != a.seq || last.Text != a.said {
			t.Fatalf("kill %d: the conversation ends with %+v, told %+v", i, last, a)
		}
		// The next turn answers with the same window, and summarizes
		// after it (seen by the next turn's, which waits for it).
		start := last.Window.Start
		b, err := h.message("t", "n"+strconv.Itoa(i), "a message after a kill, number "+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		ev = h.events(t, "t")
		if answer := ev[b.seq-1]; answer.Window.Start != start {
			t.Fatalf("kill %d: the window moved from %d to %d without a summary", i, start, answer.Window.Start)
		}
		after = b
	}
	t.Logf("%d kills, %d between an answer and its summary", kills, landed)
}
