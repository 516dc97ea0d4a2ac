package warm

import (
	"fmt"
	"testing"
	"time"
)

// A Cache keeps at most its bounds: past the count, or the bytes, the
// conversation used least lately goes; one over the bytes alone is never
// kept; Forget lets go of one agent's.
func TestWarmBounds(t *testing.T) {
	w := &Cache{MaxConversations: 3, MaxBytes: 1000}
	conv := func(size int) *Conv { return &Conv{dir: "d", events: events{size: []int{size / 2}}} }
	for i := range 5 {
		w.Put("ada", fmt.Sprint(i), conv(100))
	}
	if n, b := w.Len(); n != 3 || b != 300 {
		t.Fatalf("%d conversations, %d bytes: want the 3 used last, 300 bytes", n, b)
	}
	for _, th := range []string{"0", "1"} {
		if w.Take("ada", th, "d") != nil {
			t.Errorf("thread %s, used least lately, still kept", th)
		}
	}
	w.Put("ada", "big", conv(800)) // 300+800 > 1000: the least lately used goes
	if n, b := w.Len(); n != 3 || b != 1000 || w.Take("ada", "2", "d") != nil {
		t.Fatalf("%d conversations, %d bytes: want 3, 1000, thread 2 gone", n, b)
	}
	w.Put("ada", "huge", conv(2000))
	if w.Take("ada", "huge", "d") != nil {
		t.Error("a conversation over the bytes alone kept")
	}
	if c := w.Take("ada", "big", "elsewhere"); c != nil {
		t.Error("a conversation kept in another folder taken")
	}
	w.Put("bob", "x", conv(10))
	w.Forget("ada")
	if n, _ := w.Len(); n != 1 || w.Take("bob", "x", "d") == nil {
		t.Errorf("Forget of one agent: %d conversations left", n)
	}
}

// A conversation with no turn for the Cache's Idle is let go of: taken
// after it, nothing is there; and the next put of any lets it go.
func TestWarmIdle(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	w := &Cache{Idle: time.Minute, Now: func() time.Time { return now }}
	w.Put("ada", "quiet", &Conv{dir: "d"})
	w.Put("ada", "busy", &Conv{dir: "d"})
	now = now.Add(50 * time.Second)
	if c := w.Take("ada", "busy", "d"); c == nil {
		t.Fatal("a conversation used 50 s ago let go of")
	} else {
		w.Put("ada", "busy", c)
	}
	now = now.Add(20 * time.Second) // quiet for 70 s, busy for 20
	w.Put("bob", "x", &Conv{dir: "d"})
	if n, _ := w.Len(); n != 2 {
		t.Errorf("%d conversations kept, want the two used within the minute", n)
	}
	now = now.Add(2 * time.Minute)
	if w.Take("ada", "busy", "d") != nil {
		t.Error("a conversation idle for 2 minutes taken")
	}
}
