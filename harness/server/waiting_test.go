package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/turn"
)

// /metrics counts an agent's answers waiting at _link/recover from its
// folders at most once every waitingFresh: this process's own keeps and
// hand-overs at the next scrape, another process's once the last count is
// that old.
func TestRecoverWaitingCounted(t *testing.T) {
	f := newFixture(t, nil)
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	f.srv.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	waiting := func() float64 {
		t.Helper()
		fam, page := f.family(t, "lnk_recover_waiting")
		for _, m := range fam.Metric {
			if labels(m)["agent"] == "ada" {
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no lnk_recover_waiting for ada:\n%s", page)
		return 0
	}
	if n := waiting(); n != 0 {
		t.Fatalf("waiting at first: %v", n)
	}

	// Another process keeps an answer.
	pending := filepath.Join(f.home, "chats", "elsewhere", "pending")
	if err := os.MkdirAll(pending, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(pendingAnswer{Agent: "ada", Thread: "elsewhere", Seq: 2, Text: "kept by another"})
	if err := os.WriteFile(filepath.Join(pending, "2.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := waiting(); n != 0 {
		t.Fatalf("counted again before %v: %v", waitingFresh, n)
	}
	later(waitingFresh - time.Second)
	if n := waiting(); n != 0 {
		t.Fatalf("counted again before %v: %v", waitingFresh, n)
	}
	later(time.Second)
	if n := waiting(); n != 1 {
		t.Fatalf("waiting once the count is %v old: %v, want 1", waitingFresh, n)
	}

	// This process keeps one: counted at the next scrape.
	f.srv.keepPending(f.srv.agent("ada").Runner, "t", turn.Answer{Thread: "t", Seq: 4, Text: "kept here"})
	if n := waiting(); n != 2 {
		t.Fatalf("waiting after this process kept one: %v, want 2", n)
	}
	// Both handed over: counted at the next scrape.
	resp, body := exchange(t, http.MethodGet, f.url+"/_link/recover", key, "")
	var out []pendingAnswer
	if err := json.Unmarshal([]byte(body), &out); resp.StatusCode != 200 || err != nil || len(out) != 2 {
		t.Fatalf("recover: %d %v %s", resp.StatusCode, err, body)
	}
	if n := waiting(); n != 0 {
		t.Fatalf("waiting after the hand-over: %v, want 0", n)
	}
}

// A scrape's count of an agent's answers waiting at _link/recover, the
// agent's conversations 1,000: read from its folders, and as last counted.
func BenchmarkWaiting(b *testing.B) {
	f := newFixture(b, nil)
	for i := range 1000 {
		if err := os.MkdirAll(filepath.Join(f.home, "chats", fmt.Sprintf("c%d", i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	a := f.srv.agent("ada")
	b.Run("counted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.wait.changed.Add(1)
			a.wait.of(a.Runner.Agent, time.Now())
		}
	})
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.wait.of(a.Runner.Agent, time.Now())
		}
	})
}
