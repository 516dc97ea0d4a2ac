// Package epoll is an epoll set and the one goroutine that waits on it,
// telling each descriptor's events to what it was added with. A
// process makes one: the agents' listeners waiting for a connection
// (harness/fleet) and their connections' callers leaving
// (harness/internal/httpconn) share it, so however many agents and
// connections it serves, none has a goroutine of its own waiting. The
// set's goroutine waits in the runtime's poller, with every socket's
// reader, holding no thread.
//
// A descriptor is added under an id numbered once and never again, kept in
// the epoll event's data: an event that comes after its descriptor closed,
// the number maybe given to another, finds no one.
package epoll
