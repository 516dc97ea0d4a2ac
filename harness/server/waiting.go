package server

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"lnk.dev/linkharness/harness/home"
)

// waitingFresh is how long /metrics tells an agent's answers waiting at
// _link/recover as last counted before it counts them again. Counting
// reads the folder of every conversation of the agent (about 11 µs each,
// BenchmarkWaiting), too much for each scrape of a process of many agents
// and conversations. This process's own keeps and hand-overs are counted at
// the next scrape; another process's within waitingFresh.
const waitingFresh = time.Minute

// waitCount is an agent's answers waiting at _link/recover, as last
// counted.
type waitCount struct {
	changed atomic.Int64 // bumped when this process keeps or hands over one of the agent's answers

	mu sync.Mutex
	// guarded by mu
	n    int64
	at   int64 // when counted, in Unix nanoseconds; 0: never
	seen int64 // changed, when counted
}

// of is agent's answers waiting at _link/recover: as last counted, or
// counted again when that is older than waitingFresh or this process
// changed them since.
func (w *waitCount) of(agent home.Agent, now time.Time) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := w.changed.Load()
	if w.at != 0 && w.seen == changed && now.UnixNano()-w.at < int64(waitingFresh) {
		return w.n
	}
	w.n, w.at, w.seen = waiting(agent), now.UnixNano(), changed
	return w.n
}

// waitingChanged marks the count of agent's answers waiting at
// _link/recover to be made again at the next scrape.
func (s *Server) waitingChanged(agent string) {
	if a := s.agent(agent); a != nil {
		a.wait.changed.Add(1)
	}
}

// waiting counts the agent's answers waiting at _link/recover: the files
// recover would hand over.
func waiting(a home.Agent) int64 {
	chats, err := a.Path(home.Chats, "")
	if err != nil {
		return 0
	}
	files, _ := filepath.Glob(filepath.Join(chats, "*", "pending", "*.json"))
	return int64(len(files))
}
