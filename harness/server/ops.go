package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"lnk.dev/linkharness/harness/fork"
	"lnk.dev/linkharness/harness/home"
)

// end asks the conversation's running turn to end, and answers once it
// has: the answer it wrote marked ended, or, when it gave its own answer
// first, {thread, ended: false}. With no turn of it running here, 409 says
// so and nothing is changed.
func (s *Server) end(w http.ResponseWriter, r *http.Request, a *served, thread string) {
	name := a.Runner.Agent.Name
	if _, err := home.ThreadDir(thread); err != nil {
		s.refuse(w, name, "", http.StatusBadRequest, "thread: %v", err)
		return
	}
	ans, err := a.Runner.End(r.Context(), thread)
	if err != nil {
		s.fail(w, name, thread, err)
		return
	}
	writeJSON(w, http.StatusOK, answerOf(ans))
	s.told(a.Runner, ans.Thread, ans)
}

// forkBody is a fork's request: the owner message it replaces, the new
// text, and optionally the new message's id and the new thread's name.
type forkBody struct {
	Before *int64  `json:"before"`
	Text   *string `json:"text"`
	ID     string  `json:"id"`
	Thread string  `json:"thread"`
}

// parseForkBody reads a fork's body strictly: an unknown key, a value of
// another type, or before or text missing is refused, saying which.
func parseForkBody(data []byte) (forkBody, error) {
	var b forkBody
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, err
	}
	if dec.More() {
		return b, errors.New("more than one JSON value")
	}
	switch {
	case b.Before == nil:
		return b, errors.New("no before: the seq of the owner message the fork replaces")
	case b.Text == nil:
		return b, errors.New("no text")
	}
	return b, nil
}

// fork makes a new conversation from the thread's events before an owner
// message, then the new message, and answers it as a message is answered,
// naming the new thread. A before that is not an owner message of the
// conversation is 400, saying why. The turn runs to its end if the caller
// goes.
func (s *Server) fork(w http.ResponseWriter, r *http.Request, a *served, thread string) {
	name := a.Runner.Agent.Name
	b, ok := threadBody(s, w, r, name, thread, parseForkBody)
	if !ok {
		return
	}
	s.turns.Add(1)
	s.active.Add(1)
	defer s.turns.Done()
	defer s.idle()
	ans, err := fork.Make(r.Context(), a.Runner, thread, fork.Fork{Before: *b.Before, Text: *b.Text, ID: b.ID, Thread: b.Thread}, nil)
	if err != nil {
		s.fail(w, name, thread, err)
		return
	}
	writeJSON(w, http.StatusOK, answerOf(ans))
	s.told(a.Runner, ans.Thread, ans)
}
