package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
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

// Server answers DESIGN.md's HTTP API for its agents. It is safe for
// concurrent use. Its zero value serves no agent; use New.
type Server struct {
	agents map[string]*served
	turns  sync.WaitGroup // turns running, including those whose caller left
	active atomic.Int64   // turns running now
}

type served struct {
	Agent
	keyHash [32]byte
}

// New returns a server answering for agents, each by its runner's agent name.
func New(agents ...Agent) (*Server, error) {
	s := &Server{agents: map[string]*served{}}
	for _, a := range agents {
		name := a.Runner.Agent.Name
		if name == "" || a.Key == "" {
			return nil, fmt.Errorf("server: agent %q needs a name and a key", name)
		}
		if _, dup := s.agents[name]; dup {
			return nil, fmt.Errorf("server: agent %q twice", name)
		}
		if a.Runner.Metrics == nil {
			a.Runner.Metrics = new(turn.Metrics)
		}
		s.agents[name] = &served{Agent: a, keyHash: sha256.Sum256([]byte(a.Key))}
	}
	return s, nil
}

// idle ends a turn's share of the process: when it was the last turn
// running, the model proxy's idle connections are closed, so an idle agent
// holds no connection, no goroutine reading one, and no open file.
func (s *Server) idle() {
	if s.active.Add(-1) != 0 {
		return
	}
	for _, a := range s.agents {
		if a.Runner.HTTP != nil {
			a.Runner.HTTP.CloseIdleConnections()
		}
	}
}

// Wait waits for every turn started to end, those whose caller left too.
// A graceful stop shuts the HTTP server down first, then waits here.
func (s *Server) Wait() { s.turns.Wait() }

// ServeHTTP routes a request. Paths are split on their escaped form, so a
// thread name holding a '/' (sent as %2F) stays one segment and is refused
// by the one function that makes names into paths, never cleaned into
// another path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seg := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, p := range seg {
		u, err := url.PathUnescape(p)
		if err != nil {
			writeError(w, http.StatusBadRequest, "path segment %d: %v", i+1, err)
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
		s.recover(w, r)
	case len(seg) >= 4 && seg[0] == "v1" && seg[1] == "agents" && seg[3] == "chats":
		a, ok := s.authorize(w, r, seg[2])
		if !ok {
			return
		}
		switch {
		case len(seg) == 6 && seg[5] == "messages":
			if !method(w, r, http.MethodPost) {
				return
			}
			s.message(w, r, a, seg[4])
		case len(seg) == 5:
			if !method(w, r, http.MethodGet) {
				return
			}
			s.chat(w, r, a, seg[4])
		default:
			writeError(w, http.StatusNotFound, "no such path %s", r.URL.Path)
		}
	default:
		writeError(w, http.StatusNotFound, "no such path %s", r.URL.Path)
	}
}

func method(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method != m {
		w.Header().Set("Allow", m)
		writeError(w, http.StatusMethodNotAllowed, "%s takes %s, not %s", r.URL.Path, m, r.Method)
		return false
	}
	return true
}

// authorize checks the request's bearer key against the named agent's, in
// constant time (the hashes are compared, so not even the length leaks).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, agent string) (*served, bool) {
	a := s.agents[agent]
	if a == nil {
		writeError(w, http.StatusForbidden, "agent %q is not served here", agent)
		return nil, false
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lnk"`)
		writeError(w, http.StatusUnauthorized, "no bearer key: send Authorization: Bearer <the agent's key>")
		return nil, false
	}
	if !keyMatches(a, key) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lnk"`)
		writeError(w, http.StatusUnauthorized, "wrong key for agent %q", agent)
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
}

type usageBody struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

func answerOf(a turn.Answer) answerBody {
	return answerBody{Thread: a.Thread, Seq: a.Seq, Text: a.Text, Repeat: a.Repeat, Shared: a.Shared,
		Usage: usageBody{a.Usage.Input, a.Usage.Output, a.Usage.CacheRead, a.Usage.CacheWrite}}
}

// message takes a message and answers it, streamed when the caller accepts
// text/event-stream. The turn runs on when the caller goes; its answer is
// then kept for _link/recover. A message sent while its conversation's turn
// runs steers that turn, and is told the answer after it (turn.Runner's
// Message): one shared with an earlier message's caller is marked
// "shared", for a bridge to relay once, and is never kept for
// _link/recover, which the earlier caller's answer is.
func (s *Server) message(w http.ResponseWriter, r *http.Request, a *served, thread string) {
	if _, err := home.ThreadDir(thread); err != nil {
		writeError(w, http.StatusBadRequest, "thread: %v", err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "body over %d bytes", MaxBodyBytes)
			return
		}
		writeError(w, http.StatusBadRequest, "reading the body: %v", err)
		return
	}
	mb, err := parseMessageBody(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	if mb.Text == nil {
		writeError(w, http.StatusBadRequest, "body: no text")
		return
	}
	m := turn.Message{ID: mb.ID, Text: *mb.Text, From: mb.From, Owner: mb.Owner, Connection: mb.Connection}
	if v, ok := r.Header["Link-Tools"]; ok { // a subagent's task narrowed to these tools
		m.Tools = tools.ParseHeader(strings.Join(v, ","))
	}
	if err := m.Check(); err != nil {
		writeError(w, http.StatusBadRequest, "body: %v", err)
		return
	}

	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var sse *sseWriter
	if stream {
		sse = newSSE(w)
	}
	type result struct {
		a   turn.Answer
		err error
	}
	done := make(chan result, 1)
	gone := r.Context().Done()
	var mu sync.Mutex // guards left, finished and the stream's writes
	left, finished := false, false
	s.turns.Add(1)
	s.active.Add(1)
	go func() {
		defer s.turns.Done()
		defer s.idle()
		onText := func(string) {}
		if sse != nil {
			onText = func(frag string) {
				mu.Lock()
				if !left {
					sse.event("delta", struct {
						Text string `json:"text"`
					}{frag})
				}
				mu.Unlock()
			}
		}
		ans, err := a.Runner.Message(r.Context(), thread, m, onText)
		mu.Lock()
		finished = true
		callerLeft := left
		mu.Unlock()
		if callerLeft && err == nil && !ans.Repeat && !ans.Shared {
			keepPending(a.Runner.Agent, thread, ans)
		}
		done <- result{ans, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			code, msg := errorStatus(res.err)
			if sse != nil {
				sse.event("error", errorBody{Error: msg})
				return
			}
			writeError(w, code, "%s", msg)
			return
		}
		if sse != nil {
			sse.event("done", answerOf(res.a))
			return
		}
		writeJSON(w, http.StatusOK, answerOf(res.a))
	case <-gone:
		mu.Lock()
		left = true
		fin := finished
		mu.Unlock()
		if fin { // the turn ended as its caller left: nobody will be told
			if res := <-done; res.err == nil && !res.a.Repeat && !res.a.Shared {
				keepPending(a.Runner.Agent, thread, res.a)
			}
		}
	}
}

// errorStatus maps a turn's error to an HTTP status and a message.
func errorStatus(err error) (int, string) {
	var se *model.StatusError
	switch {
	case errors.Is(err, turn.ErrBadMessage), errors.Is(err, home.ErrBadName):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, turn.ErrThreadClash), errors.Is(err, turn.ErrUnanswered):
		return http.StatusConflict, err.Error()
	case errors.Is(err, settings.ErrBadSpec):
		return http.StatusInternalServerError, "the agent's settings: " + err.Error()
	case errors.Is(err, model.ErrTooLong), errors.As(err, &se):
		return http.StatusBadGateway, "the model: " + err.Error()
	case errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// keepPending keeps an answer whose caller left before it was told, for
// _link/recover to hand over once.
func keepPending(a home.Agent, thread string, ans turn.Answer) {
	dir, err := a.Path(home.ChatPending, thread)
	if err != nil {
		return
	}
	b, _ := json.Marshal(struct {
		Agent   string `json:"agent"`
		Thread  string `json:"thread"`
		Seq     int64  `json:"seq"`
		Text    string `json:"text"`
		Crashed bool   `json:"crashed"`
	}{a.Name, thread, ans.Seq, ans.Text, false})
	home.WriteFileAtomic(fmt.Sprintf("%s/%d.json", dir, ans.Seq), append(b, '\n'), 0o600)
}

// chat serves a conversation: its copy for people, or its events with
// Accept: application/jsonl.
func (s *Server) chat(w http.ResponseWriter, r *http.Request, a *served, thread string) {
	ag := a.Runner.Agent
	conv, err := a.Runner.Conversation(thread)
	switch {
	case errors.Is(err, home.ErrBadName):
		writeError(w, http.StatusBadRequest, "thread: %v", err)
		return
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no conversation %q", thread)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	defer conv.Close()
	last, err := conv.Last(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if last == 0 {
		writeError(w, http.StatusNotFound, "no conversation %q", thread)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "application/jsonl") {
		w.Header().Set("Content-Type", "application/jsonl")
		conv.Read(r.Context(), 1, store.Forward, func(_ int64, ev []byte) bool {
			_, err := w.Write(append(ev, '\n'))
			return err == nil
		})
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	path, _ := ag.Path(home.ChatCopy, thread)
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		io.Copy(w, f)
		return
	}
	turn.WriteCopy(r.Context(), w, ag.Name, conv)
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
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
