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
// Every loop is bounded: the messages by their count, the run by MaxTime
// and each message by Timeout; memory samples by maxSamples.
package loadgen
