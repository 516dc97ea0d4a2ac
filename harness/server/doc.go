// Package server serves agents over HTTP, the API of API.md: each request
// names its agent and proves that agent's key; a message is one turn,
// answered as JSON or streamed as server-sent events; bodies and headers
// are limited, and bad input gets a 4xx JSON error that says what is wrong
// and writes nothing. Every error's status comes from one table (status.go);
// each refusal is logged once, with its status and why, and counted in
// /metrics (harness/metrics), never with a message's text or a key.
package server
