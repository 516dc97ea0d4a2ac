package httpconn

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// response is a request's http.ResponseWriter and http.Flusher. Its body
// is held (at most bufSize) until the handler ends or it grows past that
// or is flushed; then the header is written and the rest goes as it comes.
type response struct {
	c       *conn
	req     *http.Request
	reqBody *body // req's body; nil: it has none
	header  http.Header

	status     int           // 0 until WriteHeader
	clen       int64         // the handler's Content-Length; -1 none
	noBody     bool          // a HEAD's answer, or a status with no body
	written    int64         // body bytes written by the handler
	held       []byte        // what was written before the header went
	heldp      *[]byte       // held's buffer, pooled
	bw         *bufio.Writer // from when the header is sent to the answer's end
	sent       bool          // the header went
	chunked    bool
	closeAfter bool
	failed     bool // a write to the connection failed
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.status != 0 || w.bw != nil {
		return
	}
	if code < 100 || code > 999 {
		panic("httpconn: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 {
		return // no informational answers but 100 Continue, which the body sends
	}
	w.status = code
	w.noBody = w.req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			w.clen = n
		} else {
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.noBody {
		if w.req.Method == http.MethodHead {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.bw == nil {
		if len(w.held)+len(p) <= bufSize {
			if w.heldp == nil {
				w.heldp = helds.Get().(*[]byte)
				w.held = (*w.heldp)[:0]
			}
			w.held = append(w.held, p...)
			return len(p), nil
		}
		w.send(false, p)
	}
	return len(p), w.body(p)
}

// Flush sends the header and what is held.
func (w *response) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.bw == nil {
		w.send(false, nil)
	}
	if err := w.bw.Flush(); err != nil {
		w.failed = true
	}
}

// body writes p to the connection, as a chunk when chunked.
func (w *response) body(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	var err error
	if w.chunked {
		var n [20]byte
		w.bw.Write(appendInt(n[:0], int64(len(p)), 16))
		w.bw.WriteString("\r\n")
		w.bw.Write(p)
		_, err = w.bw.WriteString("\r\n")
	} else {
		_, err = w.bw.Write(p)
	}
	if err != nil {
		w.failed = true
	}
	return err
}

// send writes the status line and header, and the body held: its length
// said when the handler is done (whole), chunked otherwise unless the
// handler said it. next is what the handler is writing past what is held,
// sniffed for a Content-Type when nothing is held. What the server adds to
// the handler's header is written after it, never put in its map.
func (w *response) send(whole bool, next []byte) {
	h := w.header
	var length []byte // the Content-Length added
	var num [20]byte
	switch {
	case w.noBody || w.clen >= 0:
	case whole:
		w.clen = int64(len(w.held))
		length = appendInt(num[:0], w.clen, 10)
	case w.req.ProtoAtLeast(1, 1):
		w.chunked = true
		h.Del("Content-Length") // set after WriteHeader, too late to be the answer's
	default:
		h.Del("Content-Length")
		w.closeAfter = true // an HTTP/1.0 body ends with its connection
	}
	sniff := w.held
	if len(sniff) == 0 {
		sniff = next
	}
	ctype := ""
	if _, ok := h["Content-Type"]; !ok && !w.noBody && len(sniff) > 0 {
		ctype = http.DetectContentType(sniff)
	}
	_, dated := h["Date"]
	if w.req.Close || hasToken(h.Get("Connection"), "close") || w.reqBody.unkept() {
		w.closeAfter = true
	}
	conn := ""
	switch {
	case w.closeAfter:
		h.Del("Connection")
		conn = "close"
	case !w.req.ProtoAtLeast(1, 1) && h.Get("Connection") == "":
		conn = "keep-alive"
	}
	w.bw = writers.Get().(*bufio.Writer)
	w.bw.Reset(w.c.nc)
	w.sent = true
	bw := w.bw
	var line [64]byte
	bw.Write(appendStatus(line[:0], w.status))
	h.Write(bw)
	if length != nil {
		bw.WriteString("Content-Length: ")
		bw.Write(length)
		bw.WriteString("\r\n")
	}
	if w.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if ctype != "" {
		bw.WriteString("Content-Type: ")
		bw.WriteString(ctype)
		bw.WriteString("\r\n")
	}
	if !dated {
		bw.WriteString("Date: ")
		bw.Write(time.Now().UTC().AppendFormat(line[:0], http.TimeFormat))
		bw.WriteString("\r\n")
	}
	if conn != "" {
		bw.WriteString("Connection: ")
		bw.WriteString(conn)
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
	w.body(w.held)
	w.dropHeld()
}

// finish ends the answer once the handler returned; false: the
// connection is not kept.
func (w *response) finish() bool {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.bw == nil {
		w.send(true, nil)
	} else if w.chunked {
		w.bw.WriteString("0\r\n\r\n")
	}
	if err := w.bw.Flush(); err != nil {
		w.failed = true
	}
	w.release()
	short := !w.noBody && w.clen >= 0 && w.written < w.clen
	return !w.failed && !w.closeAfter && !short
}

// abandon ends the answer of a handler that panicked, sending no more of
// it: one whose header had not gone is never sent, and one begun stays
// short of its end (no last chunk, or short of its length), so its client
// sees it cut rather than whole.
func (w *response) abandon() {
	w.dropHeld()
	if w.bw != nil {
		w.release()
	}
}

// dropHeld gives held's buffer back to the pool.
func (w *response) dropHeld() {
	if w.heldp != nil {
		*w.heldp = w.held[:0]
		helds.Put(w.heldp)
		w.held, w.heldp = nil, nil
	}
}

// release gives the answer's write buffer back to the pool, what it holds
// dropped.
func (w *response) release() {
	w.bw.Reset(nil)
	writers.Put(w.bw)
	w.bw = nil
}

// hasToken says whether the comma-separated list v holds token, its case
// aside.
func hasToken(v, token string) bool {
	for v != "" {
		var t string
		t, v, _ = strings.Cut(v, ",")
		if strings.EqualFold(strings.TrimSpace(t), token) {
			return true
		}
	}
	return false
}

// appendStatus appends code's status line.
func appendStatus(b []byte, code int) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = appendInt(b, int64(code), 10)
	b = append(b, ' ')
	if t := http.StatusText(code); t != "" {
		b = append(b, t...)
	} else {
		b = append(b, "status code "...)
		b = appendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

func appendInt(b []byte, n int64, base int) []byte { return strconv.AppendInt(b, n, base) }

// writers are the buffers answers are written through, and helds what an
// answer's handler wrote before its header went.
var (
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
	helds   = sync.Pool{New: func() any { b := make([]byte, 0, bufSize); return &b }}
)
