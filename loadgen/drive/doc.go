// Package drive starts a harness's agents and talks to them, for `lnk
// measure` and `lnk loadgen`: a Harness starts a Unit serving some agents
// (for Link Harness, one lnk-link-harness process), a Unit takes a Message
// to an agent's thread and returns the Reply and how long it took, and
// abilities only some units have (a metrics page, a CPU profile, their own
// count of what their commands cost, an idle program of their own) are
// interfaces beside Unit, found by type assertion.
//
// Link is Link Harness over HTTP: `lnk-link-harness serve` with --home for
// one agent or --agents FILE for several, each on its own loopback port,
// its environment the caller's less every LNK_ variable with
// LNK_MODEL_PROXY set (HarnessEnv). FindHarness finds the program (a path
// given, PATH, beside this program, or built from the source tree) and
// ParseMetrics reads its /metrics page, the Prometheus text format.
package drive
