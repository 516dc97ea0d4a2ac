package driver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/store"
)

// maxConcurrent is how many calls a server runs at once; more wait.
const maxConcurrent = 8

// Serve answers the calls read from r, one JSON-RPC request a line, writing
// each answer to w as one line, until r ends; then it waits for the calls
// still running and returns. Calls run at once, each stopped after
// CallTimeout. This is a plugin program's whole loop.
func Serve(ctx context.Context, d store.Driver, r io.Reader, w io.Writer) error {
	in := bufio.NewReaderSize(r, 64<<10)
	var (
		wmu  sync.Mutex // guards out
		out  = bufio.NewWriterSize(w, 64<<10)
		wg   sync.WaitGroup
		sem  = make(chan struct{}, maxConcurrent)
		werr error
	)
	answer := func(id json.RawMessage, result []byte, err error) {
		line := appendAnswer(nil, id, result, err)
		wmu.Lock()
		defer wmu.Unlock()
		if werr != nil {
			return
		}
		if _, werr = out.Write(line); werr == nil {
			werr = out.Flush()
		}
	}
	defer wg.Wait()
	for {
		line, err := readLine(in, MaxLine)
		if len(bytes.TrimSpace(line)) > 0 {
			var req struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
			}
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				answer(nil, nil, &rpcError{codeParse, "a line that is not a JSON-RPC request: " + jerr.Error()})
			} else if req.JSONRPC != "2.0" || req.Method == "" {
				answer(req.ID, nil, &rpcError{codeBadRequest, "not a JSON-RPC 2.0 request"})
			} else {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					cctx, cancel := context.WithTimeout(ctx, CallTimeout)
					defer cancel()
					result, err := call(cctx, d, req.Method, req.Params)
					answer(req.ID, result, err)
				}()
			}
		}
		if errors.Is(err, errLong) {
			answer(nil, nil, &rpcError{codeBadRequest, fmt.Sprintf("a request over %d bytes", MaxLine)})
			return err
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// rpcError is an error answered with its own code.
type rpcError struct {
	code int
	msg  string
}

func (e *rpcError) Error() string { return e.msg }

var errLong = errors.New("driver: line over the limit")

// readLine returns the next line without its '\n', at most max bytes; the
// last line may end without one.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, errLong
		}
		if err == bufio.ErrBufferFull {
			line = append(line, chunk...)
			continue
		}
		if line == nil {
			line = chunk
		} else {
			line = append(line, chunk...)
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// call runs method with its params against d and returns its result.
func call(ctx context.Context, d store.Driver, method string, raw []byte) ([]byte, error) {
	var p params
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, &paramsError{"params: " + err.Error()}
		}
	}
	if method == "threads" {
		l, ok := d.(store.Lister)
		if !ok {
			return nil, fmt.Errorf("threads: %w", store.ErrUnsupported)
		}
		threads, err := l.Threads(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(threadsResult{threads})
	}
	if p.Thread == "" {
		return nil, &paramsError{"params: no thread"}
	}
	c, err := d.Open(p.Thread)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return callConversation(ctx, c, method, &p)
}

// callConversation runs method, one of a conversation's, against c.
func callConversation(ctx context.Context, c store.Conversation, method string, p *params) ([]byte, error) {
	switch method {
	case "append":
		if p.Lease == 0 {
			return []byte("{}"), c.Append(ctx, p.Seq, p.Event)
		}
		l, ok := c.(store.Leaser)
		if !ok {
			return nil, fmt.Errorf("append with a lease: %w", store.ErrUnsupported)
		}
		return []byte("{}"), l.AppendLeased(ctx, p.Seq, p.Event, p.Lease)
	case "read":
		return read(ctx, c, p)
	case "last":
		n, err := c.Last(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(lastResult{n})
	case "lease", "release":
		return callLease(ctx, c, method, p)
	case "meta_get", "meta_put", "meta_delete":
		return callMeta(ctx, c, method, p)
	case "forget":
		f, ok := c.(store.Forgetter)
		if !ok {
			return nil, fmt.Errorf("%s: %w", method, store.ErrUnsupported)
		}
		return []byte("{}"), f.Forget(ctx)
	case "tools_narrow":
		n, ok := c.(store.Narrower)
		if !ok {
			return nil, fmt.Errorf("%s: %w", method, store.ErrUnsupported)
		}
		tools, err := n.NarrowTools(ctx, p.Tools)
		if err != nil {
			return nil, err
		}
		return json.Marshal(toolsResult{tools})
	}
	return nil, fmt.Errorf("no method %q: %w", method, store.ErrUnsupported)
}

// callLease runs lease or release against c, a store.Leaser.
func callLease(ctx context.Context, c store.Conversation, method string, p *params) ([]byte, error) {
	l, ok := c.(store.Leaser)
	if !ok {
		return nil, fmt.Errorf("%s: %w", method, store.ErrUnsupported)
	}
	if method == "release" {
		return []byte("{}"), l.Release(ctx, p.Token)
	}
	ttl := time.Duration(p.TTLMS) * time.Millisecond
	var (
		r   leaseResult
		err error
	)
	if t, ok := l.(store.LeaseTaker); ok {
		r.Token, r.TookOver, err = t.LeaseFrom(ctx, p.Holder, ttl)
	} else {
		r.Token, err = l.Lease(ctx, p.Holder, ttl)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// callMeta runs meta_get, meta_put or meta_delete against c, a store.Meta.
func callMeta(ctx context.Context, c store.Conversation, method string, p *params) ([]byte, error) {
	m, ok := c.(store.Meta)
	if !ok {
		return nil, fmt.Errorf("%s: %w", method, store.ErrUnsupported)
	}
	switch method {
	case "meta_put":
		return []byte("{}"), m.MetaPut(ctx, p.Name, p.Data)
	case "meta_delete":
		return []byte("{}"), m.MetaDelete(ctx, p.Name)
	}
	data, err := m.MetaGet(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	return json.Marshal(metaResult{data})
}

// read answers a page of events: at most limit (1 to 4096, 32 when not
// given) and at most maxPageBytes of them, but always one.
func read(ctx context.Context, c store.Conversation, p *params) ([]byte, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 32
	}
	limit = min(limit, 4096)
	out := append(make([]byte, 0, 4096), `{"events":[`...)
	n, stopped, lastSeq := 0, false, int64(0)
	err := c.Read(ctx, p.From, p.Reverse, func(seq int64, event []byte) bool {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, event...)
		n++
		lastSeq = seq
		if n >= limit || len(out) >= maxPageBytes {
			stopped = true
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	more := stopped && !(p.Reverse && lastSeq <= 1) && !(!p.Reverse && p.From <= 0)
	out = append(out, `],"more":`...)
	if more {
		out = append(out, "true}"...)
	} else {
		out = append(out, "false}"...)
	}
	return out, nil
}

// Handler answers the same methods over HTTP: POST /store/v1/{method} with
// the params as the body, proved by Authorization: Bearer key, compared in
// constant time. Bodies are limited to MaxLine bytes. This is what
// lnk store-bridge serves.
func Handler(d store.Driver, key []byte) http.Handler {
	want := sha256.Sum256(key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, ok := strings.CutPrefix(r.URL.Path, "/store/v1/")
		if !ok || method == "" || strings.Contains(method, "/") {
			httpError(w, http.StatusNotFound, codeNoMethod, "no such path; methods are POST /store/v1/{method}")
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			httpError(w, http.StatusMethodNotAllowed, codeBadRequest, "methods are called with POST")
			return
		}
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(bearer))
		if !ok || len(key) == 0 || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			httpError(w, http.StatusUnauthorized, codeBadRequest, "the agent's key is needed as bearer")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxLine))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				httpError(w, http.StatusRequestEntityTooLarge, codeBadRequest, fmt.Sprintf("a body over %d bytes", MaxLine))
				return
			}
			httpError(w, http.StatusBadRequest, codeBadRequest, "reading the body: "+err.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), CallTimeout)
		defer cancel()
		result, err := call(ctx, d, method, body)
		if err != nil {
			code := codeOf(err)
			httpError(w, statusOf(code), code, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(result)
	})
}

func statusOf(code int) int {
	switch code {
	case codeSeqTaken, codeGap, codeStaleLease, codeLeaseHeld:
		return http.StatusConflict
	case codeNotFound:
		return http.StatusNotFound
	case codeBadEvent, codeBadParams, codeBadRequest, codeParse:
		return http.StatusBadRequest
	case codeNoMethod:
		return http.StatusNotImplemented
	case codeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

func httpError(w http.ResponseWriter, status, code int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}{msg, code})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
