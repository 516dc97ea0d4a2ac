// Package npmtest starts the real MCP servers the tests run, the npm
// packages .ci/run installs in harness/tools/testdata/npm, for the tools'
// tests and the turn's alike: a server is found, or the test skipped (never
// under CI), started on a free port, and waited for until it says it
// listens.
package npmtest
