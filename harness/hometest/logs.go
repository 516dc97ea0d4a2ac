package hometest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"testing"
)

// Logs is what a runner or server under test logged: the writer of its
// slog handler, safe for concurrent use, read while it runs or after.
type Logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns all that was logged.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines returns each line logged as the JSON object it is, failing tb at
// a line that is not one.
func (l *Logs) Lines(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader([]byte(l.String())))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("a log line that is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}
