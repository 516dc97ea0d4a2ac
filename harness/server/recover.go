package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
)

// pendingAnswer is an answer not handed over yet, as _link/recover gives it.
type pendingAnswer struct {
	Agent   string `json:"agent"`
	Thread  string `json:"thread"`
	Seq     int64  `json:"seq"`
	Text    string `json:"text"`
	Crashed bool   `json:"crashed"`
}

// maxRecover bounds one answer of _link/recover; the bridge asks again.
const maxRecover = 256

// recover hands over the answers whose caller left before it was told,
// each once: it is removed once read into the reply. The request proves
// the key of an agent served here (own's, when set: the agent whose
// address it came to), and gets that agent's answers.
func (s *Server) recover(w http.ResponseWriter, r *http.Request, own string) {
	if !s.method(w, r, "", http.MethodGet) {
		return
	}
	a := s.byKey(r, own)
	if a == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lnk"`)
		s.refuse(w, "", "", http.StatusUnauthorized, "no key of an agent served here")
		return
	}
	out := []pendingAnswer{}
	chats, err := a.Runner.Agent.Path(home.Chats, "")
	if err != nil {
		s.fail(w, a.Runner.Agent.Name, "", err)
		return
	}
	// A pending answer's file is chats/<dir>/pending/<seq>.json; the thread
	// is read from the file, never from the folder's name.
	files, _ := filepath.Glob(filepath.Join(chats, "*", "pending", "*.json"))
	sort.Strings(files)
	for _, f := range files {
		if len(out) == maxRecover {
			break
		}
		b, err := os.ReadFile(f)
		if err != nil || len(b) > MaxBodyBytes {
			continue
		}
		var p pendingAnswer
		if json.Unmarshal(b, &p) != nil || p.Agent != a.Runner.Agent.Name || strings.TrimSpace(p.Thread) == "" {
			continue
		}
		if os.Remove(f) != nil {
			continue // another reader took it: handed over once
		}
		out = append(out, p)
		a.wait.changed.Add(1)
		a.Runner.Metrics.Did(metrics.OpHandOver)
		s.log.Info("answer handed over", "agent", p.Agent, "thread", p.Thread, "seq", p.Seq, "crashed", p.Crashed)
	}
	writeJSON(w, http.StatusOK, out)
}

// byKey finds the agent whose key the request carries: own, when set, or
// any served here.
func (s *Server) byKey(r *http.Request, own string) *served {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		return nil
	}
	agents := s.all()
	if own != "" {
		agents = agents[:0]
		if a := s.agent(own); a != nil {
			agents = append(agents, a)
		}
	}
	for _, a := range agents {
		if keyMatches(a, key) {
			return a
		}
	}
	return nil
}
