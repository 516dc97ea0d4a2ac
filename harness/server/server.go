package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/durable"
)

// MaxBodyBytes is the largest request body taken.
const MaxBodyBytes = 1 << 20

// MaxHeaderBytes is the most a request's headers may hold.
const MaxHeaderBytes = 32 << 10

// Agent is one agent the server answers for.
type Agent struct {
	Runner *turn.Runner
	Key    string // the agent's key; requests carry it as a bearer token
}

// Options are a server's collaborators, built in main.
type Options struct {
	// Log gets a line for each refusal and each answer that could not be
	// kept for _link/recover; nil logs nothing. A runner with no logger of
	// its own is given this one.
	Log *slog.Logger

	// FreeMemory, when not nil, is called once the process has run no
	// turn for IdleFree after its last turn ended, so the memory a burst
	// of turns took goes back to the system rather than staying with an
	// idle process. Main passes a function that collects twice (emptying
	// the sync.Pools) and calls debug.FreeOSMemory.
	FreeMemory func()
	// IdleFree is how long no turn runs before the process lets go of
	// what its turns held: the model proxy's idle connections are closed
	// and FreeMemory is called; 0 means DefaultIdleFree.
	IdleFree time.Duration

	// Turns, when not nil, is the process's bound on turns in flight, its
	// count and bound written on /metrics.
	Turns *budget.Turns

	// Metrics is the process's histograms, which every agent's metrics
	// count into; nil: the server makes its own.
	Metrics *metrics.Process

	// CloseIdle, when not nil, is called with FreeMemory's timing, whether
	// or not FreeMemory is set: main passes a function closing the idle
	// connections its agents share (to tool servers).
	CloseIdle func()

	// Warm, when not nil, is what the process's turns keep of their
	// conversations between turns (the agents' runners share it): let go
	// of once the process has run no turn for IdleFree, with the rest of
	// what turns held, so an idle process holds no conversation open.
	Warm *warm.Cache
}

// DefaultIdleFree is how long a server runs no turn before it closes its
// idle connections to the model proxy and gives its freed memory back:
// past a pause between two turns of one conversation, so a steady trickle
// of turns is not a dial and a collection after each.
const DefaultIdleFree = 2 * time.Second

// Server answers the HTTP API of API.md for its agents. It is safe for
// concurrent use. Its zero value serves no agent; use New.
type Server struct {
	log      *slog.Logger
	refusals metrics.Refusals
	proc     *metrics.Process // the histograms of every agent served
	bound    *budget.Turns    // the turns in flight, for /metrics; nil: not bounded
	turns    sync.WaitGroup   // turns running, including those whose caller left
	active   atomic.Int64     // turns running now

	freeMemory func()
	closeIdle  func()
	idleFree   time.Duration
	warm       *warm.Cache
	crew       crew // the goroutines turns run on

	freeMu sync.Mutex
	// guarded by freeMu
	freeTimer *time.Timer // calls release once no turn ran for idleFree; reset at each idle

	mu sync.RWMutex
	// guarded by mu
	agents map[string]*served
}

type served struct {
	Agent
	keyHash [32]byte
	turns   sync.WaitGroup // the agent's turns running, those whose caller left too
	active  atomic.Int64   // how many of them
}

// New returns a server answering for agents, each by its runner's agent
// name. A runner with no metrics is given its own.
func New(o Options, agents ...Agent) (*Server, error) {
	s := &Server{agents: map[string]*served{}, log: o.Log, freeMemory: o.FreeMemory, closeIdle: o.CloseIdle, idleFree: o.IdleFree, warm: o.Warm}
	if s.idleFree <= 0 {
		s.idleFree = DefaultIdleFree
	}
	s.bound = o.Turns
	if s.proc = o.Metrics; s.proc == nil {
		s.proc = new(metrics.Process)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, a := range agents {
		if err := s.Add(a); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add answers for agent a from now on, by its runner's agent name: an
// agent joining a process that runs. A runner with no metrics is given its
// own.
func (s *Server) Add(a Agent) error {
	name := a.Runner.Agent.Name
	if name == "" || a.Key == "" {
		return fmt.Errorf("server: agent %q needs a name and a key", name)
	}
	if a.Runner.Metrics == nil {
		a.Runner.Metrics = &metrics.Agent{Name: name, Process: s.proc}
	}
	if a.Runner.Log == nil {
		a.Runner.Log = s.log
	}
	if a.Runner.Untold == nil {
		ag := a.Runner.Agent
		a.Runner.Untold = func(thread string, ans turn.Answer) { s.keepCrashed(ag, thread, ans) }
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.agents[name]; dup {
		return fmt.Errorf("server: agent %q twice", name)
	}
	s.agents[name] = &served{Agent: a, keyHash: sha256.Sum256([]byte(a.Key))}
	return nil
}

// Remove stops answering for the agent name, an agent leaving: requests
// naming it are refused as for one never served, and Remove returns once
// its turns have ended, those whose caller left too, so what the agent
// holds (its home's lock, its drivers) can be let go of. Its listener is
// the caller's to shut down first, so no message already asked is cut off.
func (s *Server) Remove(name string) {
	s.mu.Lock()
	a := s.agents[name]
	delete(s.agents, name)
	s.mu.Unlock()
	if a != nil {
		a.turns.Wait()
		a.Runner.Rest()
	}
}

// Busy says whether a turn of the agent name runs now, one whose caller
// left too.
func (s *Server) Busy(name string) bool {
	a := s.agent(name)
	return a != nil && a.active.Load() > 0
}

// agent is the agent served by name, or nil.
func (s *Server) agent(name string) *served {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.agents[name]
}

// all is a snapshot of the agents served now.
func (s *Server) all() []*served {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*served, 0, len(s.agents))
	for _, a := range s.agents {
		out = append(out, a)
	}
	return out
}

// idle ends a turn's share of the process: when it was the last turn
// running, the process lets go of what its turns held once it stays idle
// (see releaseLater). The model proxy's connections stay open between
// turns, so a turn that follows another, of any agent, does not dial
// again.
func (s *Server) idle() {
	if s.active.Add(-1) != 0 {
		return
	}
	s.releaseLater()
}

// releaseLater calls release once no turn has run for idleFree: each idle
// moment puts it off again, so a burst is released once, after its end,
// and turns that keep coming keep their connections and are not each
// followed by a collection.
func (s *Server) releaseLater() {
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	if s.freeTimer == nil {
		s.freeTimer = time.AfterFunc(s.idleFree, s.release)
		return
	}
	s.freeTimer.Reset(s.idleFree)
}

// release closes the model proxy's idle connections and lets go of what
// turns kept of their conversations, so an idle agent holds no
// connection, no goroutine reading one and no open file, and gives the
// freed memory back; unless a turn runs again: its end puts the
// next call off.
func (s *Server) release() {
	if s.active.Load() != 0 {
		return
	}
	s.warm.Release()
	s.crew.rest()
	closed := map[*http.Client]bool{} // the agents of a process share theirs
	for _, a := range s.all() {
		a.Runner.Rest() // what it kept of its files and facts too, made again by its next turn
		if hc := a.Runner.HTTP; hc != nil && !closed[hc] {
			hc.CloseIdleConnections()
			closed[hc] = true
		}
	}
	if s.closeIdle != nil {
		s.closeIdle()
	}
	if s.freeMemory != nil {
		s.freeMemory()
	}
	s.log.Debug("idle: what the turns held let go of")
}

// Rest ends the goroutines kept waiting for turns (see crew): a process
// whose agents all sleep keeps none. Release, once no turn ran for
// IdleFree, does it too.
func (s *Server) Rest() { s.crew.rest() }

// Wait waits for every turn started to end, those whose caller left too.
// A graceful stop shuts the HTTP server down first, then waits here.
func (s *Server) Wait() { s.turns.Wait() }

// Running returns how many turns run now.
func (s *Server) Running() int64 { return s.active.Load() }

// ServeHTTP routes a request. Paths are split on their escaped form, so a
// thread name holding a '/' (sent as %2F) stays one segment and is refused
// by the one function that makes names into paths, never cleaned into
// another path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, "")
}

// For is the handler of agent name's own address: as the Server's, but its
// _link/recover answers only to that agent's key, so another agent's key
// is refused there as on every path naming this agent.
func (s *Server) For(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, name) })
}

// serve routes a request; own, when set, is the agent whose address it
// came to.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, own string) {
	seg := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, p := range seg {
		u, err := url.PathUnescape(p)
		if err != nil {
			s.refuse(w, "", "", http.StatusBadRequest, "path segment %d: %v", i+1, err)
			return
		}
		seg[i] = u
	}
	switch {
	case len(seg) == 1 && seg[0] == "healthz":
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	case len(seg) == 1 && seg[0] == "metrics":
		s.metrics(w)
	case len(seg) == 2 && seg[0] == "_link" && seg[1] == "recover":
		s.recover(w, r, own)
	case len(seg) >= 1 && seg[0] == "asp":
		s.asp(w, r, seg)
	case len(seg) >= 4 && seg[0] == "v1" && seg[1] == "agents" && seg[3] == "chats":
		thread := ""
		if len(seg) > 4 {
			thread = seg[4]
		}
		a, ok := s.authorize(w, r, seg[2], thread)
		if !ok {
			return
		}
		switch {
		case len(seg) == 6 && seg[5] == "messages":
			if !s.method(w, r, a.Runner.Agent.Name, http.MethodPost) {
				return
			}
			s.message(w, r, a, seg[4])
		case len(seg) == 6 && seg[5] == "fork":
			if !s.method(w, r, a.Runner.Agent.Name, http.MethodPost) {
				return
			}
			s.fork(w, r, a, seg[4])
		case len(seg) == 6 && seg[5] == "end":
			if !s.method(w, r, a.Runner.Agent.Name, http.MethodPost) {
				return
			}
			s.end(w, r, a, seg[4])
		case len(seg) == 5:
			if !s.method(w, r, a.Runner.Agent.Name, http.MethodGet) {
				return
			}
			s.chat(w, r, a, seg[4])
		default:
			s.refuse(w, a.Runner.Agent.Name, "", http.StatusNotFound, "no such path %s", r.URL.Path)
		}
	default:
		s.refuse(w, "", "", http.StatusNotFound, "no such path %s", r.URL.Path)
	}
}

func (s *Server) method(w http.ResponseWriter, r *http.Request, agent, m string) bool {
	if r.Method != m {
		w.Header().Set("Allow", m)
		s.refuse(w, agent, "", http.StatusMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, m, r.Method)
		return false
	}
	return true
}

// refuse answers a request with an error status and why; a 4xx is counted
// and logged once, with the agent and thread when known (agent is counted
// only when served here, so a name in a path never becomes a label).
func (s *Server) refuse(w http.ResponseWriter, agent, thread string, code int, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	writeError(w, code, "%s", why)
	if code < 400 || code >= 500 {
		return
	}
	label := agent
	if s.agent(agent) == nil {
		label = ""
	}
	s.refusals.Add(label, code)
	attrs := []any{"status", code, "why", why}
	if agent != "" {
		attrs = append(attrs, "agent", agent)
	}
	if thread != "" {
		attrs = append(attrs, "thread", thread)
	}
	s.log.Warn("refused", attrs...)
}

// authorize checks the request's bearer key against the named agent's, in
// constant time (the hashes are compared, so not even the length leaks).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, agent, thread string) (*served, bool) {
	a := s.agent(agent)
	if a == nil {
		s.refuse(w, agent, thread, http.StatusForbidden, "agent %q is not served here", agent)
		return nil, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lnk"`)
		s.refuse(w, agent, thread, http.StatusUnauthorized, "no bearer key: send Authorization: Bearer <the agent's key>")
		return nil, false
	}
	if !keyMatches(a, key) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lnk"`)
		s.refuse(w, agent, thread, http.StatusUnauthorized, "wrong key for agent %q", agent)
		return nil, false
	}
	return a, true
}

// keyMatches compares key with the agent's in constant time.
func keyMatches(a *served, key string) bool {
	h := sha256.Sum256([]byte(key))
	return subtle.ConstantTimeCompare(h[:], a.keyHash[:]) == 1
}

type answerBody struct {
	Thread string    `json:"thread"`
	Seq    int64     `json:"seq"`
	Text   string    `json:"text"`
	Usage  usageBody `json:"usage"`
	Repeat bool      `json:"repeat,omitempty"`
	Shared bool      `json:"shared,omitempty"`
	Ended  bool      `json:"ended,omitempty"`
}

type usageBody struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

func answerOf(a turn.Answer) answerBody {
	return answerBody{Thread: a.Thread, Seq: a.Seq, Text: a.Text, Repeat: a.Repeat, Shared: a.Shared, Ended: a.Ended,
		Usage: usageBody{a.Usage.Input, a.Usage.Output, a.Usage.CacheRead, a.Usage.CacheWrite}}
}

// threadBody checks the thread's name and reads the request's body, at
// most MaxBodyBytes of it; when either is wrong it refuses the request and
// reports false.
func (s *Server) threadBody(w http.ResponseWriter, r *http.Request, name, thread string) ([]byte, bool) {
	if _, err := home.ThreadDir(thread); err != nil {
		s.refuse(w, name, "", http.StatusBadRequest, "thread: %v", err)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, name, thread, http.StatusRequestEntityTooLarge, "body over %d bytes", MaxBodyBytes)
			return nil, false
		}
		s.refuse(w, name, thread, http.StatusBadRequest, "reading the body: %v", err)
		return nil, false
	}
	return body, true
}

// message takes a message and answers it, streamed when the caller accepts
// text/event-stream. The turn runs on when the caller goes; its answer is
// then kept for _link/recover. A message sent while its conversation's turn
// runs steers that turn, and is told the answer after it (turn.Runner's
// Message): one shared with an earlier message's caller is marked
// "shared", for a bridge to relay once, and is never kept for
// _link/recover, which the earlier caller's answer is.
func (s *Server) message(w http.ResponseWriter, r *http.Request, a *served, thread string) {
	name := a.Runner.Agent.Name
	if a.Runner.Full(thread) {
		// Refused before its body is read, its connection closed: a flood
		// of messages past the bound holds nothing here but for a moment.
		s.refuseFull(w, name, thread, budget.ErrFull)
		return
	}
	body, ok := s.threadBody(w, r, name, thread)
	if !ok {
		return
	}
	mb, err := parseMessageBody(body)
	if err != nil {
		s.refuse(w, name, thread, http.StatusBadRequest, "body: %v", err)
		return
	}
	if mb.Text == nil {
		s.refuse(w, name, thread, http.StatusBadRequest, "body: no text")
		return
	}
	m := turn.Message{ID: mb.ID, Text: *mb.Text, From: mb.From, Owner: mb.Owner, Connection: mb.Connection}
	if v, ok := r.Header["Link-Tools"]; ok { // a subagent's task narrowed to these tools
		m.Tools = tools.ParseHeader(strings.Join(v, ","))
	}
	if err := m.Check(); err != nil {
		s.refuse(w, name, thread, http.StatusBadRequest, "body: %v", err)
		return
	}

	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var sse *sseWriter
	if stream {
		sse = newSSE(w)
	}
	// The turn runs on this goroutine: a turn in flight holds one
	// goroutine, not one waiting for another. What follows its answer (a
	// summary) runs on a goroutine of the crew, so the caller's
	// connection is free once it is told.
	s.begin(a)
	detached := false
	m.Detach = func(rest func()) {
		detached = true
		s.crew.run(func() {
			defer s.ended(a)
			rest()
		})
	}
	gone := r.Context()
	onText := func(string) {}
	if sse != nil {
		onText = func(frag string) {
			if gone.Err() == nil {
				sse.event("delta", struct {
					Text string `json:"text"`
				}{frag})
			}
		}
	}
	// The caller is told once: as soon as the answer is given, before the
	// turn summarizes, or when Message returns without one. One that left
	// before has its answer kept for _link/recover.
	told := false
	tell := func(ans turn.Answer, err error) {
		if told {
			return
		}
		told = true
		if gone.Err() != nil {
			if err == nil && !ans.Repeat && !ans.Shared {
				s.keepPending(a.Runner.Agent, thread, ans)
				s.told(a.Runner, thread, ans)
			}
			return
		}
		s.reply(w, sse, name, thread, a, ans, err)
	}
	m.Answered = func(ans turn.Answer) { tell(ans, nil) }
	ans, err := a.Runner.Message(r.Context(), thread, m, onText)
	tell(ans, err)
	if !detached {
		s.ended(a)
	}
}

// begin counts a turn of a in.
func (s *Server) begin(a *served) {
	s.turns.Add(1)
	a.turns.Add(1)
	a.active.Add(1)
	s.active.Add(1)
}

// ended counts a turn of a out, once what it did after its answer ended
// too.
func (s *Server) ended(a *served) {
	s.idle()
	a.active.Add(-1)
	a.turns.Done()
	s.turns.Done()
}

// reply tells a message's caller its answer, or why it has none, on w: a
// JSON body, or the stream's last event.
func (s *Server) reply(w http.ResponseWriter, sse *sseWriter, name, thread string, a *served, ans turn.Answer, err error) {
	if err != nil && full(err) && sse == nil {
		s.refuseFull(w, name, thread, err)
		return
	}
	if err != nil {
		// The turn logged its error; a 4xx is counted as a refusal.
		code, msg := status(err), s.said(name, errorMessage(err))
		if code >= 400 && code < 500 || full(err) {
			s.refusals.Add(name, code)
		}
		if sse != nil {
			sse.event("error", errorBody{Error: msg})
			return
		}
		if ra := retryAfter(err); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		writeError(w, code, "%s", msg)
		return
	}
	// Told before the reply goes: a process that dies between the two
	// leaves an answer its caller asks again for by the message's id, and
	// is given from the conversation (see CHOICES.md).
	s.told(a.Runner, thread, ans)
	if sse != nil {
		sse.event("done", answerOf(ans))
		return
	}
	writeJSON(w, http.StatusOK, answerOf(ans))
	// Sent now, whole: the turn may go on to summarize before the handler
	// returns.
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// refuseFull answers a message the process had no room for (see full):
// 503 with Retry-After, logged and counted; its connection is closed with
// the answer, so what it held goes at once.
func (s *Server) refuseFull(w http.ResponseWriter, agent, thread string, err error) {
	code, msg := status(err), s.said(agent, errorMessage(err))
	s.refusals.Add(agent, code)
	s.log.Warn("refused", "status", code, "why", msg, "agent", agent, "thread", thread)
	w.Header().Set("Retry-After", retryAfter(err))
	w.Header().Set("Connection", "close")
	writeError(w, code, "%s", msg)
}

// keepPending keeps an answer whose caller left before it was told, for
// _link/recover to hand over once. Not kept, it is logged: the answer is in
// the conversation, but no bridge will be told it.
func (s *Server) keepPending(a home.Agent, thread string, ans turn.Answer) {
	if err := writePending(a, thread, ans, false); err != nil {
		s.log.Error("answer not kept for recover", "agent", a.Name, "thread", thread, "seq", ans.Seq, "error", err)
	}
}

// keepCrashed keeps an answer a process that died wrote and never told,
// for _link/recover to hand over once, marked crashed.
func (s *Server) keepCrashed(a home.Agent, thread string, ans turn.Answer) {
	if err := writePending(a, thread, ans, true); err != nil {
		s.log.Error("answer not kept for recover", "agent", a.Name, "thread", thread, "seq", ans.Seq, "crashed", true, "error", err)
		return
	}
	s.log.Info("crashed turn's answer kept", "agent", a.Name, "thread", thread, "seq", ans.Seq)
}

// told marks an answer told, once its caller was given it or it was kept
// for _link/recover, so no later turn takes it for a dead process's.
func (s *Server) told(r *turn.Runner, thread string, ans turn.Answer) {
	if ans.Seq == 0 {
		return
	}
	if err := r.MarkTold(thread, ans.Seq); err != nil {
		s.log.Error("answer not marked told", "agent", r.Agent.Name, "thread", thread, "seq", ans.Seq, "error", err)
		return
	}
	s.log.Debug("answer marked told", "agent", r.Agent.Name, "thread", thread, "seq", ans.Seq)
}

func writePending(a home.Agent, thread string, ans turn.Answer, crashed bool) error {
	dir, err := a.Path(home.ChatPending, thread)
	if err != nil {
		return err
	}
	b, err := json.Marshal(pendingAnswer{a.Name, thread, ans.Seq, ans.Text, crashed})
	if err != nil {
		return err
	}
	return durable.WriteFileAtomic(fmt.Sprintf("%s/%d.json", dir, ans.Seq), append(b, '\n'), 0o600)
}

// chat serves a conversation: its copy for people, or its events with
// Accept: application/jsonl.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, a *served, thread string) {
	ag := a.Runner.Agent
	conv, err := a.Runner.Conversation(thread)
	if err != nil {
		s.fail(w, ag.Name, thread, err)
		return
	}
	defer conv.Close()
	last, err := conv.Last(r.Context())
	if err != nil {
		s.fail(w, ag.Name, thread, err)
		return
	}
	if last == 0 {
		s.refuse(w, ag.Name, thread, http.StatusNotFound, "no conversation %q", thread)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "application/jsonl") {
		s.chatEvents(w, r, ag.Name, thread, conv)
		return
	}
	path, _ := ag.Path(home.ChatCopy, thread)
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		io.Copy(w, f)
		return
	}
	// Made from the events: held until it is whole, or past holdBytes,
	// so damage met before then is an error status.
	h := &holding{w: w, contentType: "text/markdown; charset=utf-8"}
	if _, err := chatcopy.Write(r.Context(), h, ag.Name, conv); err != nil {
		s.cut(w, h, ag.Name, thread, err)
		return
	}
	h.flush()
}

// holdBytes is how much of a conversation's events a GET holds before it
// sends its status: a conversation this small is read whole first, so
// damage in it is answered as an error.
const holdBytes = 1 << 20

// chatEvents answers a conversation's events, one a line. It reads them
// whole before it sends its status: the first holdBytes held, the rest
// read once to check it reads whole and again to send it. Damage met
// before the status is sent is answered with the error's status (500 for
// store.ErrCorrupt, the file and offset said); an error after it (the
// files changed between the two reads) cuts the response off before its
// end, which a client sees as a body cut short.
func (s *Server) chatEvents(w http.ResponseWriter, r *http.Request, agent, thread string, conv store.Conversation) {
	h := &holding{w: w, contentType: "application/jsonl"}
	next, rest := int64(1), false // the first seq not held; whether any is not
	err := conv.Read(r.Context(), 1, store.Forward, func(seq int64, ev []byte) bool {
		if rest = rest || len(h.buf)+len(ev)+1 > holdBytes; !rest {
			h.buf = append(append(h.buf, ev...), '\n')
			next = seq + 1
		}
		return true // past what is held, read on to check it reads whole
	})
	if err != nil {
		s.fail(w, agent, thread, err)
		return
	}
	h.flush()
	if h.err != nil || !rest {
		return
	}
	err = conv.Read(r.Context(), next, store.Forward, func(_ int64, ev []byte) bool {
		if _, err := w.Write(ev); err != nil {
			return false
		}
		_, err := w.Write(newline)
		return err == nil
	})
	if err != nil {
		s.cut(w, h, agent, thread, err)
	}
}

var newline = []byte{'\n'}

// cut answers err if nothing of the body was sent, else ends the response
// before its end: the connection is closed without the chunked body's
// last chunk (HTTP/1.1) or with a reset stream (HTTP/2), which a client
// reads as an error, never as a whole body.
func (s *Server) cut(w http.ResponseWriter, h *holding, agent, thread string, err error) {
	if !h.sent {
		s.fail(w, agent, thread, err)
		return
	}
	s.log.Error("response cut short", "agent", agent, "thread", thread, "error", err)
	panic(http.ErrAbortHandler)
}

// holding is a ResponseWriter's body held until holdBytes are written or
// flush is called; then the status 200 and what is held are sent, and what
// follows goes straight to w.
type holding struct {
	w           http.ResponseWriter
	contentType string
	buf         []byte
	sent        bool  // the status is sent
	err         error // the first write's error after it
}

func (h *holding) Write(b []byte) (int, error) {
	if !h.sent && len(h.buf)+len(b) <= holdBytes {
		h.buf = append(h.buf, b...)
		return len(b), nil
	}
	h.flush()
	if h.err != nil {
		return 0, h.err
	}
	n, err := h.w.Write(b)
	if err != nil {
		h.err = err
	}
	return n, err
}

// flush sends the status and what is held, once.
func (h *holding) flush() {
	if h.sent {
		return
	}
	h.sent = true
	h.w.Header().Set("Content-Type", h.contentType)
	h.w.WriteHeader(http.StatusOK)
	if _, err := h.w.Write(h.buf); err != nil {
		h.err = err
	}
	h.buf = nil
}

// fail answers a request with err's status (see status): a 4xx is a
// refusal, anything else logged as the request's failure. The caller is
// told err without the agent's home or its model proxy (see redact); the
// log says it in full.
func (s *Server) fail(w http.ResponseWriter, agent, thread string, err error) {
	code, msg := status(err), s.said(agent, errorMessage(err))
	if code >= 400 && code < 500 {
		s.refuse(w, agent, thread, code, "%s", msg)
		return
	}
	writeError(w, code, "%s", msg)
	s.log.Error("request failed", "agent", agent, "thread", thread, "status", code, "error", err)
}

type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{Error: fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
