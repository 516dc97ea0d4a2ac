// Package harness holds the turn loop of Link Harness and what it needs,
// one small package each: home (every path of an agent, from one function),
// settings (the spec and config.json), model (the providers' wire formats),
// prompt (the prompt's sections and bytes), turn (one turn's steps) and the
// decisions a turn leans on (idempotency, warm, instructions, chatcopy,
// running, summary, window), metrics (histograms and counters in the
// Prometheus text format), and server (serving agents over HTTP).
package harness
