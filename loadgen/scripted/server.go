package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fastjson"
)

// Limits of what the server takes and keeps.
const (
	maxBody      = 32 << 20 // a request body's bytes
	keptRequests = 100      // request bodies kept for Requests
	keptBytes    = 64 << 20 // their bytes, together; the oldest go first
	maxStall     = 10 * time.Minute
)

// Server is the scripted model: an http.Handler speaking Anthropic's
// Messages API (/v1/messages, /anthropic/v1/messages), the Chat
// Completions API (/v1/chat/completions, /openai/v1/chat/completions,
// /openrouter/v1/chat/completions), OpenAI's Responses API (/v1/responses,
// /openai/v1/responses) and Ollama's (/api/chat and /api/show, also under
// /ollama), streamed or not, answering as its script says. GET /_scripted/requests gives the bodies it kept, one a
// line.
//
// A Server is safe for concurrent use. Its script must not change once it
// serves.
type Server struct {
	script  *Script
	parsers fastjson.ParserPool
	done    chan struct{} // closed by Close and Shutdown: stalls end
	stop    sync.Once
	cache   promptCache  // with the script's Cache: the requests a prompt cache holds
	conns   atomic.Int64 // the connections accepted, on every listener served

	mu sync.Mutex // guards the fields below
	// The request bodies kept, a ring of keptRequests: the oldest at head.
	kept      [keptRequests][]byte
	head, n   int
	keptTotal int
	servers   []*http.Server // serving s, stopped with it
}

// New returns a server answering as s says; nil is the default script. s
// is used as is: a script from ParseScript is valid, a Go value can be
// checked with Validate.
func New(s *Script) *Server {
	return &Server{script: s, done: make(chan struct{})}
}

// Listen listens on addr and serves in the background until Close or
// Shutdown. It returns the address it listens on, its port picked when addr
// says 0.
func Listen(addr string, s *Script) (*Server, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := New(s)
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr(), nil
}

// Serve serves on ln until Close or Shutdown, when it returns
// http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	hs := s.server()
	if hs == nil {
		ln.Close()
		return http.ErrServerClosed
	}
	return hs.Serve(ln)
}

// server returns a new http.Server of s, or nil once s has stopped.
func (s *Server) server() *http.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ConnState: s.count}
	s.servers = append(s.servers, hs)
	return hs
}

// count counts a connection accepted.
func (s *Server) count(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		s.conns.Add(1)
	}
}

// Conns returns how many connections s accepted on the listeners it served
// (Listen's and Serve's): how often its callers dialed it.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Shutdown ends the stalls, then stops serving once the requests under way
// are answered, or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.end()
	var errs []error
	for _, hs := range s.httpServers() {
		errs = append(errs, hs.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Close stops serving at once, closing every connection.
func (s *Server) Close() error {
	s.end()
	var errs []error
	for _, hs := range s.httpServers() {
		errs = append(errs, hs.Close())
	}
	return errors.Join(errs...)
}

// end closes done, under mu so no server is added after.
func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop.Do(func() { close(s.done) })
}

func (s *Server) httpServers() []*http.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Server(nil), s.servers...)
}

// Requests returns the bodies of the last requests to the model's paths,
// at most 100, oldest first. They are shared: do not change them.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, s.n)
	for i := range out {
		out[i] = s.kept[(s.head+i)%keptRequests]
	}
	return out
}

// keep adds a body to the ring, dropping the oldest past its count or its
// bytes.
func (s *Server) keep(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == keptRequests {
		s.drop()
	}
	s.kept[(s.head+s.n)%keptRequests] = body
	s.n++
	s.keptTotal += len(body)
	for s.keptTotal > keptBytes && s.n > 1 {
		s.drop()
	}
}

func (s *Server) drop() {
	s.keptTotal -= len(s.kept[s.head])
	s.kept[s.head] = nil
	s.head = (s.head + 1) % keptRequests
	s.n--
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var f format
	switch r.URL.Path {
	case "/v1/messages", "/anthropic/v1/messages":
		f = anthropic
	case "/v1/chat/completions", "/openai/v1/chat/completions":
		f = openAI
	case "/openrouter/v1/chat/completions":
		f = openRouter
	case "/v1/responses", "/openai/v1/responses":
		f = responses
	case "/api/chat", "/ollama/api/chat":
		f = ollama
	case "/api/show", "/ollama/api/show":
		s.serveShow(w, r)
		return
	case "/_scripted/requests":
		s.serveRequests(w, r)
		return
	default:
		writeJSONError(w, http.StatusNotFound, "no such path: "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, f, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": only POST", "", 0)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, f, http.StatusBadRequest, "reading the body: "+err.Error(), "", 0)
		return
	}
	s.keep(body)
	p := s.parsers.Get()
	req, err := parseRequest(p, f, body)
	s.parsers.Put(p)
	if err != nil {
		writeError(w, f, http.StatusBadRequest, err.Error(), "", 0)
		return
	}
	h := fnv.New64a()
	h.Write(body)
	a := plan(s.script, req, h.Sum64())
	if s.script != nil && s.script.Cache && (a.rule == nil || !a.rule.Usage.tokens()) {
		read, write := s.cache.use(f, req.key, body)
		a.usage.CacheRead, a.usage.CacheWrite = int64(read/4), int64(write/4)
		a.usage.Input = int64(max((len(body)-read-write)/4, 1))
	}
	if !s.wait(r.Context(), a.latency) {
		return
	}
	if rule := a.rule; rule != nil {
		switch {
		case rule.Refuse:
			writeTooLong(w, f, req.size/4)
			return
		case rule.Status != 0 && rule.AfterChunks == 0:
			writeError(w, f, rule.Status, "", "", rule.RetryAfter)
			return
		}
	}
	if !req.stream {
		writeWhole(w, req, a)
		return
	}
	st := &stream{w: w, f: f, ctx: r.Context(), srv: s, a: a}
	st.flusher, _ = w.(http.Flusher)
	h2 := w.Header()
	h2.Set("Content-Type", "text/event-stream")
	if f == ollama {
		h2.Set("Content-Type", "application/x-ndjson")
	}
	h2.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	switch f {
	case anthropic:
		st.anthropic(req)
	case ollama:
		st.ollama(req)
	case responses:
		st.responses(req)
	default:
		st.openAI(req)
	}
}

// readBody reads a request's body, up to maxBody.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, maxBody)
	if n := r.ContentLength; n > 0 && n <= maxBody {
		b := make([]byte, n)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(rd)
}

// serveRequests writes the bodies kept, one JSON value a line: the body
// compacted, or as a JSON string when it is not JSON.
func (s *Server) serveRequests(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeJSONError(w, http.StatusMethodNotAllowed, "only GET")
		return
	}
	var out bytes.Buffer
	for _, b := range s.Requests() {
		if json.Valid(b) {
			_ = json.Compact(&out, b)
		} else {
			q, _ := json.Marshal(string(b))
			out.Write(q)
		}
		out.WriteByte('\n')
	}
	w.Header().Set("Content-Type", "application/jsonl")
	_, _ = w.Write(out.Bytes())
}

// wait waits d, or until the client goes or the server stops; it says
// whether the whole wait passed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// hold is a stall: nothing until the client goes or the server stops.
func (s *Server) hold(ctx context.Context) {
	s.wait(ctx, maxStall)
}

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	b := append([]byte(`{"error":`), quote(msg)...)
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
