package server

import (
	"io"
	"net/http"
	"os"
	"strings"

	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
)

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
	dir, err := a.Runner.Folder(r.Context(), thread)
	if err != nil {
		s.fail(w, ag.Name, thread, err)
		return
	}
	path, _ := home.In(dir, home.ChatCopy)
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
