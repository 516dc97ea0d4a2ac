package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
)

// statuses is the one table of errors to HTTP statuses, matched with
// errors.Is in order; the first match wins.
var statuses = []struct {
	err  error
	code int
}{
	{turn.ErrBadMessage, http.StatusBadRequest},
	{turn.ErrBadFork, http.StatusBadRequest}, // before is not an owner message, or the new thread is taken
	{home.ErrBadName, http.StatusBadRequest},
	{store.ErrNotFound, http.StatusNotFound},
	{turn.ErrThreadClash, http.StatusConflict},
	{store.ErrSeqTaken, http.StatusConflict}, // another process wrote the conversation meanwhile
	{store.ErrGap, http.StatusConflict},
	{store.ErrStaleLease, http.StatusConflict},
	{settings.ErrBadSpec, http.StatusInternalServerError},
	{turn.ErrNotRunning, http.StatusConflict},           // an end asked of a conversation no turn runs
	{turn.ErrEnded, http.StatusConflict},                // ended before its message was written: nothing was
	{turn.ErrBusy, http.StatusServiceUnavailable},       // another process's turn holds the conversation: Retry-After
	{budget.ErrFull, http.StatusServiceUnavailable},     // as many turns run as the process lets: Retry-After
	{ErrStopping, http.StatusServiceUnavailable},        // the process is stopping: Retry-After
	{home.ErrConverting, http.StatusServiceUnavailable}, // convert or repair holds the home: Retry-After
	{syscall.EMFILE, http.StatusServiceUnavailable},     // the process's descriptors all taken: Retry-After
	{syscall.ENFILE, http.StatusServiceUnavailable},     // the machine's: Retry-After
	{turn.ErrTimeout, http.StatusGatewayTimeout},        // the whole turn past [turn] timeout: what it had is written
	{model.ErrTooLong, http.StatusBadGateway},
	{model.ErrUnavailable, http.StatusBadGateway},
	{model.ErrCut, http.StatusBadGateway},
	{model.ErrStalled, http.StatusBadGateway},
	{model.ErrMalformed, http.StatusBadGateway},
	{model.ErrTooLarge, http.StatusBadGateway},
	{model.ErrTimeout, http.StatusGatewayTimeout},    // the whole call past [model] timeout
	{turn.ErrStopped, http.StatusServiceUnavailable}, // the process stopped: the caller may retry elsewhere or later
	{model.ErrUnreachable, http.StatusBadGateway},
	{context.Canceled, http.StatusServiceUnavailable},
}

// status is the HTTP status that answers err: the table's, a provider's
// refusal (*model.StatusError) 502 Bad Gateway, anything else 500.
func status(err error) int {
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	if se := (*model.StatusError)(nil); errors.As(err, &se) {
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// busyRetry is the Retry-After, in seconds, of a message refused because
// another process's turn held its conversation: a turn's usual length.
const busyRetry = "5"

// stopRetry is the Retry-After, in seconds, of a request to a process
// stopping: another process takes its agents as soon as it is gone.
const stopRetry = "1"

// retryAfter is the Retry-After an error's answer carries, or "". A
// message the process had no room for is told when room is likely, as
// the bound on turns says (budget.RetryAfter).
func (s *Server) retryAfter(err error) string {
	switch {
	case errors.Is(err, turn.ErrBusy), errors.Is(err, home.ErrConverting):
		return busyRetry
	case errors.Is(err, ErrStopping):
		return stopRetry
	case full(err):
		return strconv.Itoa(s.bound.RetryAfter(time.Now()))
	}
	return ""
}

// full says whether err is the process having no room for a turn: every
// place taken, or every descriptor, or the process stopping. A refusal,
// logged and counted.
func full(err error) bool {
	return errors.Is(err, budget.ErrFull) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, ErrStopping)
}

// errorMessage is err as an answer says it, with where it came from when
// the error does not say.
func errorMessage(err error) string {
	switch {
	case errors.Is(err, settings.ErrBadSpec):
		return "the agent's settings: " + err.Error()
	case errors.Is(err, turn.ErrTimeout):
		return err.Error()
	case status(err) == http.StatusBadGateway, status(err) == http.StatusGatewayTimeout:
		return "the model: " + err.Error()
	}
	return err.Error()
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
