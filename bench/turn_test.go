package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// writeConversation writes n events of about 600 bytes, messages and
// answers in turn, each answer with its window's checkpoint.
func writeConversation(b *testing.B, dir, thread string, n int) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10)
	hometest.WriteLog(b, dir, thread, at, n, func(e *event.Event) {
		e.Text = text
		if e.Seq%2 == 1 {
			e.Type, e.Head, e.Owner = event.TypeMessage, "[Thu 2026-01-01 00:00 UTC · bench · Ada, your owner]", true
		} else {
			e.Type, e.Model, e.Provider, e.ResponseID = event.TypeAnswer, "anthropic/claude-opus-5-5", "anthropic", "msg_0123456789"
			e.Usage = event.Usage{Input: 1200, Output: 120, CacheRead: 1100}
			e.Window = &event.Window{Start: max(1, e.Seq-31), StartTime: at}
		}
	})
}

// BenchmarkTurn is one whole turn, in process: the message appended and
// synced, the settings read, the window read back, the prompt composed, the
// scripted model called over loopback HTTP, the answer appended and synced,
// the copy added to. Its cost must not grow with the conversation.
func BenchmarkTurn(b *testing.B) {
	_, proxy := hometest.Model(b, nil)
	env := map[string]string{"LNK_MODEL_PROXY": proxy}
	for _, n := range []int{0, 1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			r := newRunner(b, env)
			if n > 0 {
				chat, _ := r.Agent.Path(home.Chat, "bench")
				writeConversation(b, chat, "bench", n)
				// The copy for people a conversation has, so the first turn
				// adds to it rather than making it again from every event.
				conv, err := eventlog.Open(chat)
				if err != nil {
					b.Fatal(err)
				}
				f, err := os.Create(filepath.Join(chat, "chat.md"))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := chatcopy.Write(context.Background(), f, "ada", conv); err != nil {
					b.Fatal(err)
				}
				f.Close()
				conv.Close()
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := r.Message(ctx, "bench", turn.Message{Text: fmt.Sprintf("message %d", i), Owner: true}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A whole turn's allocations, the scripted model's in the same process
// included, held under a budget: each turn decodes its window into a slice
// an earlier turn gave back, and makes its model messages and its request's
// body at about their size. Grown through their doublings instead, a turn
// in a new conversation allocated about 680 KiB.
func TestTurnAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	_, proxy := hometest.Model(t, nil)
	r := newRunner(t, map[string]string{"LNK_MODEL_PROXY": proxy})
	ctx := context.Background()
	send := func(i int) {
		if _, err := r.Message(ctx, "budget", turn.Message{Text: fmt.Sprintf("message %d", i), Owner: true}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 { // a window of 200 events, and the caches warm
		send(i)
	}
	const (
		turns  = 50
		budget = 400 << 10 // bytes a turn
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range turns {
		send(100 + i)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / turns; per > budget {
		t.Errorf("a turn allocates %d KiB, over %d KiB", per>>10, budget>>10)
	} else {
		t.Logf("a turn allocates %d KiB in %d allocations", per>>10, (after.Mallocs-before.Mallocs)/turns)
	}
}

// newRunner is a Runner of a fresh agent ada reading env, calling its
// model through the harness's own transport.
func newRunner(tb testing.TB, env map[string]string) *turn.Runner {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	return &turn.Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return env[k] }, HTTP: &http.Client{Transport: &model.Transport{}}, Open: openLog}
}

// openLog keeps the benchmarks' conversations as logs: the programs wire
// the other ways.
func openLog(dir, _ string) (store.Conversation, error) { return eventlog.Open(dir) }
