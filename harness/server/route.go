package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

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
	case len(seg) == 1 && seg[0] == "readyz":
		s.ready(w, own)
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

// ready answers /readyz: 200 while the process takes work; 503 once it is
// stopping, and, on an agent's own address, while that agent's store
// cannot be opened (the last turn that tried said so).
func (s *Server) ready(w http.ResponseWriter, own string) {
	w.Header().Set("Content-Type", "text/plain")
	why := ""
	switch {
	case s.stopping.Load():
		why = "stopping"
	case own != "":
		if a := s.agent(own); a != nil {
			if err := a.Runner.StoreErr(); err != nil {
				why = s.said(own, fmt.Sprintf("agent %s: its store cannot be opened: %v", own, err))
			}
		}
	}
	if why != "" {
		w.Header().Set("Retry-After", stopRetry)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, why+"\n")
		return
	}
	io.WriteString(w, "ok\n")
}
