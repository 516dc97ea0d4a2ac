// Package loadgen is `lnk loadgen`: a dense shared_harness deployment under
// load, on loopback. One lnk-link-harness process serves N agents (serve
// --agents FILE, each on its own port, as itself), each with M
// conversations; a fixed number of clients send every conversation its
// messages, one at a time per conversation, Concurrency conversations at
// once, to the scripted model (loadgen/scripted) served in this process
// with a script's latency and answer-length distributions.
//
// It reports the throughput, the latency the client saw and the latency
// the harness added (the client's latency less the time the model took
// for that very message, matched by a token in its text) at p50, p90 and
// p99, the errors, the harness's memory sampled over time, its CPU per
// message, and the largest bottleneck from its CPU profile.
//
// With a tool share, that share of the messages asks for a tool: the
// scripted model calls memory__search or file__read, in turn, and answers
// once the result is back. The built-in memory and file tool servers
// (loadgen/memory, loadgen/files) are then served in this process over a
// home of their own, which every agent shares since the harness takes one
// LNK_MEMORY and one LNK_FILE for all the agents of a process; they count
// and time the calls they answer. The latency added by the harness is then
// given for the messages with a tool call and for those without.
//
// With churn (`--churn K`), once half the messages are answered the last
// K agents leave and K new ones join, by one SIGHUP re-reading the agents
// file; a conversation of a leaving agent not yet begun, or refused
// mid-way, goes on with a joining one. The messages of the agents that
// stayed, left and joined are counted apart, and each leaving agent's logs
// are read back: a message it refused must be in none, and every message
// there must have its answer.
//
// Soak (`lnk loadgen --soak DURATION`) is the same harness under faults
// rather than load: a few callers send one agent turns, a third of them
// calling a tool; the process is SIGKILLed every 0.5 to 3 s and started
// again on the same home; a sixth of the requests are dropped by their
// caller mid-turn, and every message cut short is sent again with its id
// until it is answered. After each kill, and at the end, every log is read
// back and checked: each answer acknowledged with 200 is at its seq byte
// for byte, seqs run from 1 with no gap, no message id is written twice,
// none is acknowledged with two answers, and no tool is called twice for
// one message: the scripted model calls one tool once for a message that
// asks, so within a message's events a second call of a tool or a second
// result of one call is a call made again. Its randomness comes from one
// seed, printed. The run is bounded by its duration (at most an hour) and
// its callers (at most 64).
//
// Every loop is bounded: the messages by their count, the run by MaxTime
// and each message by Timeout; memory samples by maxSamples.
//
// # Packages
//
// Beneath loadgen are the parts of a harness under load, which `lnk
// measure` uses too: the scripted model (loadgen/scripted), the built-in
// tool servers (loadgen/memory, loadgen/files), starting a harness and
// sending it messages (loadgen/drive), sampling its process from /proc
// (loadgen/proc), summarizing its CPU profiles (loadgen/profile) and the
// quantiles (loadgen/stats). None of them, and not loadgen, imports
// measure: measure stands on them, never the other way.
package loadgen
