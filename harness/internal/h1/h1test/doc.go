// Package h1test is a raw HTTP/1.1 server for tests of what a client does
// when a server misbehaves: it reads each request whole and lets the test
// write the answer on the connection itself, or close it without one, as
// a proxy closing an idle connection does while a request is on its way.
package h1test
