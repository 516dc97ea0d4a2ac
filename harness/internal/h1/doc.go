// Package h1 is an HTTP/1.1 client transport that works on its caller's
// goroutine: the model client's, which talks to one model proxy.
//
// net/http's Transport runs two goroutines for every connection it keeps
// (one reading, one writing) and hands each request, its answer and every
// read of the answer's body from the caller to them and back. For a
// process holding a thousand agents' connections that is two thousand
// goroutines, whose descriptors the runtime never frees once they have
// existed, and each model call pays the hand-offs in scheduler wake-ups.
// Transport here writes the request and reads the answer itself, on the
// goroutine that calls RoundTrip and then reads the body: no goroutine per
// connection or per request, no timer per idle connection. An idle
// connection holds its socket and nothing else: its read buffer goes back
// to a pool shared by the process until it is used again.
//
// It speaks HTTP/1.1 only (https offers ALPN "http/1.1" alone), uses no
// proxy, asks for no compression and handles 1xx answers no further than
// http.ReadResponse does. What it does:
//
//   - The request is written through a pooled bufio.Writer in one write
//     where it fits, or its head and body in one writev where the body is
//     longer, and the answer read with http.ReadResponse from the
//     connection's reader. An answer's header over MaxHeaderBytes is
//     refused with ErrHeaderTooLarge.
//   - Reading the body to its end gives the connection back to the idle
//     pool, unless the request or the answer said Connection: close or the
//     server sent bytes past the answer. Closing the body before its end
//     closes the connection.
//   - The request's context, while the request and its body are in use,
//     closes the connection when it is done (context.AfterFunc, which
//     costs no goroutine until it fires), so a blocked write or read
//     returns; the error then wraps the context's error and its cause.
//   - Idle connections are kept per scheme and host, the most recently
//     used first, at most MaxIdle; one idle longer than IdleTimeout is
//     closed when it is next looked at, and CloseIdleConnections closes
//     them all. Before one is used again, one non-blocking peek at its
//     socket (recvfrom with MSG_PEEK|MSG_DONTWAIT) says whether the server
//     has closed it or sent something unasked: then it is closed and the
//     next tried.
//
// A request is sent again, once, on a newly dialed connection when a
// reused connection fails before any byte of the answer came back (the
// write failed, or reading the status line met the connection's end or a
// reset) and its body can be made again (none, or GetBody set, as
// http.NewRequest sets it for a bytes.Reader). That is the race every
// kept-alive client has: the server closed an idle connection while the
// request was on its way. For the model proxy it is safe: the server read
// no request it answered, or it closed the connection without answering,
// and a model call that is made twice costs tokens but writes nothing; the
// harness writes only what an answer it read says.
package h1
