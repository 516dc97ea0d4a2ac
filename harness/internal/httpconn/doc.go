// Package httpconn answers HTTP/1.1 requests on connections its caller
// accepted: the agents' connections, each a message's.
//
// net/http's server holds, for every connection, a 4 KiB read buffer for
// the connection's life, a 4 KiB write buffer and a 2 KiB one for each
// answer while its handler runs, and, once a request's body is read, a
// goroutine of its own blocked in a read to see the caller leave. A turn
// waits seconds for its model with all of that held: some 10 KiB of
// buffers and a goroutine's stack a turn in flight. Server here holds a
// connection's read buffer only while it reads a request (given back as
// soon as the body is read to its end), an answer's buffers only while the
// answer is written, and sees callers leave with no goroutine at all: one
// epoll set of the process is told when a connection's far end closes
// (EPOLLRDHUP), and the request's context is canceled then.
//
// What it does, and no more:
//
//   - A request is read with http.ReadRequest, its header limited to
//     MaxHeaderBytes (431 past it, and the connection closed), in
//     ReadHeaderTimeout; its body within ReadTimeout of its first byte.
//     A malformed request is answered 400 and the connection closed. An
//     HTTP/1.1 request with no Host is malformed.
//   - "Expect: 100-continue" is answered "100 Continue" when the handler
//     first reads the body, unless its answer's header went before; any
//     other Expect is refused 417.
//   - An answer of at most 4 KiB, its handler done, goes in one write with
//     its Content-Length; a longer one, or one flushed (http.Flusher)
//     before its end, goes chunked unless the handler set its
//     Content-Length. A Content-Type not set is sniffed, as net/http does.
//     HEAD answers have no body.
//   - A connection is kept for the next request unless the request or the
//     answer says Connection: close, the request is HTTP/1.0 without
//     keep-alive, the handler left more than 256 KiB of the body unread,
//     or the answer fell short of its Content-Length; the answer says
//     Connection: close when that is known before it goes (a body never
//     asked for, or one whose unread rest is over 256 KiB). Between
//     requests it waits at most IdleTimeout, holding no buffer.
//   - A handler's panic is logged and its connection closed, no more of
//     its answer sent: one whose header had not gone is never sent, one
//     begun is left cut. The process goes on (http.ErrAbortHandler is not
//     logged).
//
// It speaks no HTTP/2, no TLS, no Upgrade, no Trailer and no
// Hijacker, none of which the agents' API uses.
package httpconn
