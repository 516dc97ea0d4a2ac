package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store/durable"
)

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

// threadBody checks the thread's name, reads the request's body, at most
// MaxBodyBytes of it, and parses it with parse (a message's, a fork's);
// when any is wrong it refuses the request and reports false.
func threadBody[B any](s *Server, w http.ResponseWriter, r *http.Request, name, thread string, parse func([]byte) (B, error)) (B, bool) {
	var none B
	if _, err := home.ThreadDir(thread); err != nil {
		s.refuse(w, name, "", http.StatusBadRequest, "thread: %v", err)
		return none, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, name, thread, http.StatusRequestEntityTooLarge, "body over %d bytes", MaxBodyBytes)
			return none, false
		}
		s.refuse(w, name, thread, http.StatusBadRequest, "reading the body: %v", err)
		return none, false
	}
	b, err := parse(body)
	if err != nil {
		s.refuse(w, name, thread, http.StatusBadRequest, "body: %v", err)
		return none, false
	}
	return b, true
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
	if s.stopping.Load() {
		s.refuseFull(w, name, thread, ErrStopping)
		return
	}
	if a.Runner.Full(thread) {
		// Refused before its body is read, its connection closed: a flood
		// of messages past the bound holds nothing here but for a moment.
		s.bound.Refuse(time.Now())
		s.refuseFull(w, name, thread, budget.ErrFull)
		return
	}
	m, ok := s.readMessage(w, r, name, thread)
	if !ok {
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
		m.OnTool = func(st turn.ToolStep) {
			if gone.Err() == nil {
				sse.toolStep(st)
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
				s.keepPending(a.Runner, thread, ans)
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

// readMessage reads the message of r to thread of the agent name, or
// refuses it and says so (false). It is a function of its own, so that
// what reads the body is not on the stack while the turn waits.
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request, name, thread string) (turn.Message, bool) {
	mb, ok := threadBody(s, w, r, name, thread, parseMessageBody)
	if !ok {
		return turn.Message{}, false
	}
	if mb.Text == nil {
		s.refuse(w, name, thread, http.StatusBadRequest, "body: no text")
		return turn.Message{}, false
	}
	m := turn.Message{ID: mb.ID, Text: *mb.Text, From: mb.From, Owner: mb.Owner, Connection: mb.Connection, TraceFrom: r.Header}
	if v, ok := r.Header["Link-Tools"]; ok { // a subagent's task narrowed to these tools
		m.Tools = tools.ParseHeader(strings.Join(v, ","))
	}
	if err := m.Check(); err != nil {
		s.refuse(w, name, thread, http.StatusBadRequest, "body: %v", err)
		return turn.Message{}, false
	}
	return m, true
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
		if ra := s.retryAfter(err); ra != "" {
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
	w.Header().Set("Retry-After", s.retryAfter(err))
	w.Header().Set("Connection", "close")
	writeError(w, code, "%s", msg)
}

// keepPending keeps an answer whose caller left before it was told, for
// _link/recover to hand over once. Not kept, it is logged: the answer is in
// the conversation, but no bridge will be told it.
func (s *Server) keepPending(r *turn.Runner, thread string, ans turn.Answer) {
	if err := s.writePending(r, thread, ans, false); err != nil {
		s.log.Error("answer not kept for recover", "agent", r.Agent.Name, "thread", thread, "seq", ans.Seq, "error", err)
	}
}

// keepCrashed keeps an answer a process that died wrote and never told,
// for _link/recover to hand over once, marked crashed.
func (s *Server) keepCrashed(r *turn.Runner, thread string, ans turn.Answer) {
	if err := s.writePending(r, thread, ans, true); err != nil {
		s.log.Error("answer not kept for recover", "agent", r.Agent.Name, "thread", thread, "seq", ans.Seq, "crashed", true, "error", err)
		return
	}
	s.log.Info("crashed turn's answer kept", "agent", r.Agent.Name, "thread", thread, "seq", ans.Seq)
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

func (s *Server) writePending(r *turn.Runner, thread string, ans turn.Answer, crashed bool) error {
	folder, err := r.Folder(context.Background(), thread)
	if err != nil {
		return err
	}
	dir, err := home.In(folder, home.ChatPending)
	if err != nil {
		return err
	}
	b, err := json.Marshal(pendingAnswer{r.Agent.Name, thread, ans.Seq, ans.Text, crashed})
	if err != nil {
		return err
	}
	defer s.waitingChanged(r.Agent.Name)
	return durable.WriteFileAtomic(fmt.Sprintf("%s/%d.json", dir, ans.Seq), append(b, '\n'), 0o600)
}
