package server

import (
	"net/http"

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
}
