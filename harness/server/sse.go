package server

import (
	"encoding/json"
	"net/http"
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
