package turn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// A long conversation in a small window, through the scripted model with
// its prompt cache on, for Anthropic's format and OpenAI's: 2,000 messages
// (200 with -short) in a 4,000-token window. It reports the prompt-start
// changes, the summaries and the turns between them, the share of each
// request that repeats the previous one's prefix, and the scripted model's
// cache report (input tokens read from the cache over all input tokens,
// from the usage each answer and summary kept), beside the same figure were
// each summary a fresh request, as peers make theirs (nothing of it read
// from the cache). Asserted: an ordinary turn repeats at least 99% of the
// request before it; a summary's request repeats all of its answer's
// messages; the window never moves on without a summary.
//
//	go test ./harness/turn -run TestLongConversation -v
func TestLongConversation(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	for _, modelName := range []string{"anthropic/claude-opus-5-5", "openai/gpt-6-luna"} {
		provider, _, _ := strings.Cut(modelName, "/")
		t.Run(provider, func(t *testing.T) { longConversation(t, modelName, n) })
	}
}

func longConversation(t *testing.T, modelName string, n int) {
	r, _ := newRunner(t, nil)
	rec := recordRequests(t, r, &scripted.Script{Seed: 1, Cache: true, Rules: []scripted.Rule{
		{Match: askWords, AnswerBytes: 600, AnswerBytesMax: 1200},
		{Match: "any", AnswerBytes: 100, AnswerBytesMax: 700},
	}})
	s := settings.Defaults()
	s.Model.Name = modelName
	s.Window.Max, s.Window.MaxSet = 4000, true
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		prev                   []byte // the request before
		ordinary, sums, starts int
		worstOrdinary                = 1.0
		lastStart              int64 = 1
		lastThrough            int64
	)
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
			starts++
			if ans.Window.Start != lastThrough+1 {
				t.Fatalf("turn %d: the window moved to %d without a summary (the last covers through %d)", i, ans.Window.Start, lastThrough)
			}
			lastStart = ans.Window.Start
		} else if prev != nil {
			// Anthropic's breakpoint moves to the newest message by design:
			// the bytes compared are the prompt's, without the markers.
			p, a := unmarked(prev), unmarked(answer)
			share := float64(commonPrefix(p, a)) / float64(len(p))
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
			if p, cut := commonPrefix(answer, summary), len(answer)-len("]}"); p < cut {
				t.Errorf("turn %d: the summary's request repeats %d of its answer's %d bytes of messages", i, p, cut)
			}
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
	// The scripted model's cache report, as the events kept it.
	var read, all, summaryRead, summaryAll int64
	for _, e := range readEvents(t, r, "long") {
		if e.Type != event.TypeAnswer && e.Type != event.TypeSummary {
			continue
		}
		in := e.Usage.Input + e.Usage.CacheRead + e.Usage.CacheWrite
		read, all = read+e.Usage.CacheRead, all+in
		if e.Type == event.TypeSummary {
			summaryRead, summaryAll = summaryRead+e.Usage.CacheRead, summaryAll+in
		}
	}
	t.Logf("%d messages in a 4,000-token window: %d prompt-start changes, %d summaries, %.1f turns a summary", n, starts, sums, float64(n)/float64(sums))
	t.Logf("ordinary turns (%d): the worst repeats %.2f%% of the request before; summaries' requests repeat all of their answer's messages", ordinary, 100*worstOrdinary)
	t.Logf("input tokens read from the cache: %.1f%% of %d with summaries continuing the answer's request (their own %.1f%%); %.1f%% were each summary a fresh request",
		100*float64(read)/float64(all), all, 100*float64(summaryRead)/float64(summaryAll), 100*float64(read-summaryRead)/float64(all))
}

// unmarked is a request's body without Anthropic's cache markers.
func unmarked(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(`,"cache_control":{"type":"ephemeral"}`), nil)
}

// lastEvents is the conversation's last n events, oldest first, read back
// from its end.
func lastEvents(t *testing.T, r *Runner, thread string, n int) []event.Event {
	t.Helper()
	out := scanEvents(t, r, thread, store.FromLast, store.Backward, n)
	slices.Reverse(out)
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
