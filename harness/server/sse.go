package server

import (
	"bytes"
	"encoding/json"
	"net/http"

	"lnk.dev/linkharness/harness/turn"
)

// sseWriter writes server-sent events. Not safe for concurrent use: the
// caller serializes.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

func (s *sseWriter) event(name string, v any) {
	b, _ := json.Marshal(v)
	buf := make([]byte, 0, len(name)+len(b)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	s.w.Write(buf)
	if s.f != nil {
		s.f.Flush()
	}
}

// toolStep writes a tool call as it is made, a call event, or its outcome,
// a result event: never the result's text, which the answer may quote or
// not as the model chooses.
func (s *sseWriter) toolStep(st turn.ToolStep) {
	if !st.Done {
		args := json.RawMessage(st.Args)
		switch {
		case len(bytes.TrimSpace(args)) == 0:
			args = json.RawMessage("{}") // as the tool is sent none
		case !json.Valid(args):
			args, _ = json.Marshal(string(st.Args)) // what the model sent, as text
		}
		s.event("call", struct {
			Tool string          `json:"tool"`
			ID   string          `json:"id"`
			Args json.RawMessage `json:"arguments"`
		}{st.Name, st.ID, args})
		return
	}
	s.event("result", struct {
		Tool string `json:"tool"`
		ID   string `json:"id"`
		OK   bool   `json:"ok"`
	}{st.Name, st.ID, !st.Failed})
}
