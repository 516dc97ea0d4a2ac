// Package server serves agents over HTTP, DESIGN.md's API: each request
// names its agent and proves that agent's key; a message is one turn,
// answered as JSON or streamed as server-sent events; bodies and headers
// are limited, and bad input gets a 4xx JSON error that says what is wrong
// and writes nothing.
package server
