package turn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// cacheBlock is the granularity of the prefix cache the run counts with:
// OpenAI caches a prompt's prefix in blocks of 128 tokens, about 512 bytes.
const cacheBlock = 512

// A long conversation in a small window, through the scripted model
// (OpenAI's format: the requests carry no cache markers, so every byte a
// request shares with the one before counts): 2,000 messages (200 with
// -short) in a 4,000-token window. It reports the prompt-start changes,
// the summaries and the turns between them, the share of each request
// that repeats the previous one's prefix, and the input a provider would
// serve from its cache, beside the same figure with each summary made as a
// fresh request, as peers make theirs. Asserted: an ordinary turn repeats
// at least 99% of the request before it; a summary's request repeats all of
// its answer's messages; the window never moves on without a summary.
//
//	go test ./harness/turn -run TestLongConversation -v
func TestLongConversation(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	r, _ := newRunner(t, nil)
	rec := recordRequests(t, r, &scripted.Script{Seed: 1, Rules: []scripted.Rule{
		{Match: askWords, AnswerBytes: 600, AnswerBytesMax: 1200},
		{Match: "any", AnswerBytes: 100, AnswerBytesMax: 700},
	}})
	s := settings.Defaults()
	s.Model.Name = "openai/gpt-6-luna"
	s.Window.Max, s.Window.MaxSet = 4000, true
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		prev                    []byte // the request before
		ordinary, changed, sums int
		worstOrdinary           = 1.0
		cached, input           int // bytes
		summaryCached           int // bytes of summaries' requests served from the cache
		startChanges            int
		lastStart               int64 = 1
		lastThrough             int64
	)
	count := func(cur []byte, fromCache int) {
		input += len(cur)
		cached += fromCache / cacheBlock * cacheBlock
	}
	for i := 1; i <= n; i++ {
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("about the plans for the day ", 3+i%7))
		if _, err := r.Message(ctx, "long", Message{ID: fmt.Sprint(i), Text: text}, nil); err != nil {
			t.Fatal(err)
		}
		made := rec.take()
		if len(made) != 1 && len(made) != 2 {
			t.Fatalf("turn %d: %d requests", i, len(made))
		}
		answer := made[0]
		// The answer's request against the one before.
		if prev != nil {
			p := commonPrefix(prev, answer)
			count(answer, p)
		} else {
			count(answer, 0)
		}
		ev := lastEvents(t, r, "long", 3)
		var ans *event.Event
		for j := len(ev) - 1; j >= 0; j-- {
			if ev[j].Type == event.TypeAnswer {
				ans = &ev[j]
				break
			}
		}
		if ans == nil || ans.Window == nil {
			t.Fatalf("turn %d: no answer among %+v", i, ev)
		}
		if ans.Window.Start != lastStart {
			startChanges++
			changed++
			if ans.Window.Start != lastThrough+1 {
				t.Fatalf("turn %d: the window moved to %d without a summary (the last covers through %d)", i, ans.Window.Start, lastThrough)
			}
			lastStart = ans.Window.Start
		} else if prev != nil {
			share := float64(commonPrefix(prev, answer)) / float64(len(prev))
			worstOrdinary = min(worstOrdinary, share)
			ordinary++
			if share < 0.99 {
				t.Errorf("turn %d: %.2f%% of the previous request repeated, under 99%%", i, 100*share)
			}
		}
		prev = answer
		if len(made) == 2 {
			summary := made[1]
			sums++
			cut := len(answer) - len("]}")
			if p := commonPrefix(answer, summary); p < cut {
				t.Errorf("turn %d: the summary's request repeats %d of its answer's %d bytes of messages", i, p, cut)
			}
			p := commonPrefix(answer, summary)
			count(summary, p)
			summaryCached += p / cacheBlock * cacheBlock
			last := ev[len(ev)-1]
			if last.Type != event.TypeSummary {
				t.Fatalf("turn %d: a summary asked and none written: %+v", i, last)
			}
			lastThrough = last.Through
			prev = summary
		}
	}
	if sums == 0 {
		t.Fatal("no summary")
	}
	t.Logf("%d messages in a 4,000-token window: %d prompt-start changes, %d summaries, %.1f turns a summary", n, startChanges, sums, float64(n)/float64(sums))
	t.Logf("ordinary turns (%d): the worst repeats %.2f%% of the request before; summaries' requests repeat all of their answer's messages", ordinary, 100*worstOrdinary)
	t.Logf("input served from the cache: %.1f%% with summaries continuing the answer's request; %.1f%% were each summary a fresh request", 100*float64(cached)/float64(input), 100*float64(cached-summaryCached)/float64(input))
}

// lastEvents is the conversation's last n events, oldest first, read back
// from its end.
func lastEvents(t *testing.T, r *Runner, thread string, n int) []event.Event {
	t.Helper()
	conv, err := r.Conversation(thread)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var out []event.Event
	var dec event.Decoder
	err = conv.Read(context.Background(), store.FromLast, store.Backward, func(_ int64, b []byte) bool {
		var e event.Event
		if err := dec.Decode(bytes.Clone(b), &e); err != nil {
			t.Fatal(err)
		}
		out = append([]event.Event{e}, out...)
		return len(out) < n
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recorder keeps every request body the model is sent, for a test to take
// turn by turn. It is safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

// take returns the bodies kept since the last take.
func (rc *recorder) take() [][]byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	b := rc.bodies
	rc.bodies = nil
	return b
}

// recordRequests points r at a scripted model answering as script says,
// behind a recorder.
func recordRequests(t *testing.T, r *Runner, script *scripted.Script) *recorder {
	t.Helper()
	model := scripted.New(script)
	rc := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, body)
		rc.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		model.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { model.Close(); srv.Close() })
	env := map[string]string{"LNK_MODEL_PROXY": srv.URL}
	r.Getenv = func(k string) string { return env[k] }
	return rc
}
