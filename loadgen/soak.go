package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/scripted"
)

// SoakConfig says how long to soak the harness and with what seed. Zero
// fields take the defaults given.
type SoakConfig struct {
	Program  string        // the lnk-link-harness program (default: as drive.FindHarness finds it)
	Duration time.Duration // how long to send turns (default 1 min, at most 1 h)
	Seed     uint64        // the randomness of drops, kills and tool calls
	Callers  int           // callers at once, each on its own thread (default 4, at most 64)
	Dir      string        // where the temporary folder goes (default the system's)
	Progress io.Writer     // a line every few seconds; nil for none
}

// SoakResult is what a soak tried and what it found.
type SoakResult struct {
	Seed       uint64   `json:"seed"`
	Seconds    float64  `json:"seconds"`
	Turns      int      `json:"turns"`      // messages answered 200
	ToolTurns  int      `json:"tool_turns"` // of them, messages that asked for a tool
	Kills      int      `json:"kills"`      // SIGKILLs of the serving process
	Drops      int      `json:"drops"`      // requests cancelled mid-turn by their caller
	Retries    int      `json:"retries"`    // messages sent again with the same id
	Refused    int      `json:"refused"`    // answers other than 200 from a live process
	Checks     int      `json:"checks"`     // times every conversation was read back and checked
	Violations []string `json:"violations"` // broken invariants, the first maxViolations
}

// maxViolations bounds the violations a SoakResult keeps.
const maxViolations = 20

// ErrViolation comes from Soak when an invariant was broken.
var ErrViolation = errors.New("loadgen: soak: invariant broken")

// Soak runs Link Harness under faults for cfg.Duration: callers send turns
// (some calling the built-in tool servers) to one agent, the serving
// process is SIGKILLed now and then and started again on the same home,
// callers drop requests mid-turn and send the same message id again. After
// each kill, and at the end, it reads every conversation's log back and
// checks that every answer acknowledged with 200 is in it byte for byte at
// the seq it was answered with, that seqs run from 1 without a gap, that
// no message id is written twice, that no id is acknowledged with two
// different answers, and that no tool is called twice for one message (see
// messageCalls.see for what that can see). It returns ErrViolation, with the result, if any of
// them was broken. Everything it starts is stopped before it returns.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	if cfg.Duration == 0 {
		cfg.Duration = time.Minute
	}
	if cfg.Callers == 0 {
		cfg.Callers = 4
	}
	if cfg.Duration < 0 || cfg.Duration > time.Hour || cfg.Callers < 1 || cfg.Callers > 64 {
		return nil, fmt.Errorf("%w: soak of %v, %d callers", ErrConfig, cfg.Duration, cfg.Callers)
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "lnk loadgen: soak: "+format+"\n", args...)
		}
	}
	// The run's limit: the duration, then time for a last check.
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration+5*time.Minute)
	defer cancel()
	base, err := scripted.ParseScript(DefaultScript)
	if err != nil {
		return nil, err
	}
	rg, err := newRig(ctx, cfg.Dir, "lnk-soak-", cfg.Program, base, true, 1)
	if err != nil {
		return nil, err
	}
	defer rg.close()
	s := &soak{cfg: cfg, agent: rg.agents[0], program: rg.program, acked: map[string]ack{}, say: say,
		res: &SoakResult{Seed: cfg.Seed}}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	err = s.run(ctx)
	s.res.Seconds = time.Since(start).Seconds()
	if err != nil {
		return nil, err
	}
	if len(s.res.Violations) > 0 {
		return s.res, fmt.Errorf("%w: %d found, the first: %s", ErrViolation, len(s.res.Violations), s.res.Violations[0])
	}
	return s.res, nil
}

// soak is one soak's state: the serving process, what was acknowledged,
// what was tried.
type soak struct {
	cfg     SoakConfig
	agent   drive.Agent
	program string
	say     func(string, ...any)

	mu    sync.Mutex
	srv   *serving
	acked map[string]ack // message id → its acknowledged answer
	res   *SoakResult
}

// serving is one harness process: dead is closed just before it is
// killed, next once another serves in its place.
type serving struct {
	unit drive.Unit
	dead chan struct{}
	next chan struct{}
}

// ack is an answer acknowledged with 200.
type ack struct {
	thread string
	seq    int64
	text   string
}

// start starts a harness process on the soak's home.
func (s *soak) start(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	unit, err := (&drive.Link{Program: s.program}).Start(sctx, []drive.Agent{s.agent})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.srv = &serving{unit: unit, dead: make(chan struct{}), next: make(chan struct{})}
	s.mu.Unlock()
	return nil
}

func (s *soak) current() *serving {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// run sends turns until the duration ends, killing and restarting the
// process meanwhile, then stops it and checks the logs a last time.
func (s *soak) run(ctx context.Context) error {
	sendCtx, stopSending := context.WithTimeout(ctx, s.cfg.Duration)
	defer stopSending()
	var wg sync.WaitGroup
	for c := range s.cfg.Callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.caller(sendCtx, c, rand.New(rand.NewPCG(s.cfg.Seed, uint64(c)+1)))
		}()
	}
	rng := rand.New(rand.NewPCG(s.cfg.Seed, 0))
	var err error
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for err == nil {
		wait := time.NewTimer(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		select {
		case <-sendCtx.Done():
			wait.Stop()
		case <-tick.C:
			wait.Stop()
			s.mu.Lock()
			s.say("%d turns, %d kills, %d drops, %d retries, %d violations", s.res.Turns, s.res.Kills, s.res.Drops, s.res.Retries, len(s.res.Violations))
			s.mu.Unlock()
			continue
		case <-wait.C:
			err = s.kill(ctx)
			continue
		}
		break
	}
	stopSending() // the callers too, if a restart failed
	wg.Wait()
	srv := s.current()
	if err != nil {
		srv.unit.Kill()
		return err
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.unit.Stop(stopCtx); err != nil {
		return err
	}
	return s.check()
}

// kill SIGKILLs the serving process, checks the logs it left, and starts
// another on the same home.
func (s *soak) kill(ctx context.Context) error {
	srv := s.current()
	close(srv.dead)
	srv.unit.Kill()
	s.mu.Lock()
	s.res.Kills++
	s.mu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	err := s.start(ctx)
	close(srv.next)
	return err
}

// caller sends its thread's messages one after another until ctx ends,
// each until it is answered 200: some dropped mid-turn and sent again,
// some cut by a kill and sent again once the process is back.
func (s *soak) caller(ctx context.Context, c int, rng *rand.Rand) {
	thread := fmt.Sprintf("soak-%d", c+1)
	for i := 1; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("lg-soak-%d-%d", c+1, i)
		tool := ""
		if rng.IntN(3) == 0 {
			tool = []string{callMemory, callFile}[rng.IntN(2)]
		}
		msg := drive.Message{ID: id, Text: messageText(id, tool)}
		for try := 0; ctx.Err() == nil; try++ {
			if try > 0 {
				s.count(func(r *SoakResult) { r.Retries++ })
			}
			srv := s.current()
			mctx, mcancel := context.WithTimeout(ctx, 2*time.Minute)
			var drop *time.Timer
			if rng.IntN(6) == 0 {
				drop = time.AfterFunc(time.Duration(rng.IntN(400))*time.Millisecond, mcancel)
			}
			rep, err := srv.unit.Send(mctx, s.agent.Name, thread, msg)
			dropped := mctx.Err() != nil && ctx.Err() == nil
			if drop != nil {
				drop.Stop()
			}
			mcancel()
			if err == nil {
				s.acknowledge(id, thread, rep, tool != "")
				break
			}
			switch {
			case ctx.Err() != nil:
				return
			case dropped:
				s.count(func(r *SoakResult) { r.Drops++ })
				continue
			}
			select {
			case <-srv.dead: // cut by a kill: again once another process serves
				select {
				case <-srv.next:
				case <-ctx.Done():
					return
				}
				continue
			default:
			}
			s.count(func(r *SoakResult) { r.Refused++ })
			s.say("message %s refused: %v", id, err)
			select { // refused by a live process: again after a pause, or once it is replaced
			case <-srv.next:
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
	}
}

func (s *soak) count(f func(*SoakResult)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.res)
}

// violation records a broken invariant. s.mu is held.
func (s *soak) violation(format string, args ...any) {
	if len(s.res.Violations) < maxViolations {
		s.res.Violations = append(s.res.Violations, fmt.Sprintf(format, args...))
	} else if len(s.res.Violations) == maxViolations {
		s.res.Violations = append(s.res.Violations, "…and more")
	}
}

// acknowledge records a 200: the same id acknowledged before must have
// had the same answer.
func (s *soak) acknowledge(id, thread string, rep drive.Reply, tool bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := ack{thread: thread, seq: rep.Seq, text: rep.Text}
	if old, ok := s.acked[id]; ok {
		if old != a {
			s.violation("message %s answered twice: seq %d %.60q, then seq %d %.60q", id, old.seq, old.text, a.seq, a.text)
		}
		return
	}
	s.acked[id] = a
	s.res.Turns++
	if tool {
		s.res.ToolTurns++
	}
}

// logLine is what check reads of an event.
type logLine struct {
	Seq    int64  `json:"seq"`
	Type   string `json:"type"`
	ID     string `json:"id"`
	Text   string `json:"text"`
	CallID string `json:"call_id"` // a result's
	Name   string `json:"name"`    // a result's tool
	Calls  []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"calls"` // an answer's
}

// messageCalls is what check counts of one message's turn: from the
// message to the next one, the tools called and the calls answered.
type messageCalls struct {
	id      string
	seq     int64
	called  map[string]int64 // tool: the seq of the answer that called it
	results map[string]int64 // call id: the seq of its result
}

// see checks the event e of thread against its message's calls, and
// starts a new message's at a message. The scripted model calls one tool
// once for a message that asks for one, and answers once that call's
// result is back: a second call of a tool, or a second result of one
// call, within one message's events is a call made twice for it (the
// message's turn run again, or a call run again whose result was
// written). A call that ran but whose result a kill cut before it was
// written is run again by the retry and written once: the log cannot tell
// it, nor can the tool servers, which the calls' arguments do not tell
// which message they are for.
func (m *messageCalls) see(s *soak, thread string, e *logLine) {
	switch e.Type {
	case "message":
		*m = messageCalls{id: e.ID, seq: e.Seq, called: map[string]int64{}, results: map[string]int64{}}
	case "answer":
		for _, c := range e.Calls {
			if first, ok := m.called[c.Name]; ok {
				s.violation("%s: message %s (seq %d): %s called twice, by the answers at seq %d and %d", thread, m.id, m.seq, c.Name, first, e.Seq)
				continue
			}
			if m.called != nil {
				m.called[c.Name] = e.Seq
			}
		}
	case "result":
		if first, ok := m.results[e.CallID]; ok {
			s.violation("%s: message %s (seq %d): call %s of %s answered twice, at seq %d and %d", thread, m.id, m.seq, e.CallID, e.Name, first, e.Seq)
			return
		}
		if m.results != nil {
			m.results[e.CallID] = e.Seq
		}
	}
}

// check reads every conversation's log, with no process writing it, and
// records what breaks an invariant. A last line without its newline is a
// write the kill cut, which the next process sets aside.
func (s *soak) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Checks++
	logs := map[string]map[int64]logLine{}
	for c := range s.cfg.Callers {
		thread := fmt.Sprintf("soak-%d", c+1)
		b, err := os.ReadFile(filepath.Join(s.agent.Home, "chats", thread, "events.jsonl"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("loadgen: soak: %w", err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
			b = b[:i+1]
		}
		bySeq := map[int64]logLine{}
		ids := map[string]int64{}
		var calls messageCalls
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 8<<20)
		for n := int64(1); sc.Scan(); n++ {
			var e logLine
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				s.violation("%s line %d: %v", thread, n, err)
				break
			}
			if e.Seq != n {
				s.violation("%s line %d has seq %d", thread, n, e.Seq)
				break
			}
			if e.Type == "message" && e.ID != "" {
				if first, ok := ids[e.ID]; ok {
					s.violation("%s: message %s written at seq %d and %d", thread, e.ID, first, e.Seq)
				}
				ids[e.ID] = e.Seq
			}
			calls.see(s, thread, &e)
			bySeq[e.Seq] = e
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("loadgen: soak: %s: %w", thread, err)
		}
		logs[thread] = bySeq
	}
	for id, a := range s.acked {
		e, ok := logs[a.thread][a.seq]
		if !ok || e.Type != "answer" || e.Text != a.text {
			s.violation("message %s: its answer (seq %d, %.60q) is not in %s's log as given (%s %.60q)", id, a.seq, a.text, a.thread, e.Type, e.Text)
		}
	}
	return nil
}
