//go:build race

package h1

// raceEnabled: the race detector changes how many allocations code makes
// (sync.Pool drops items at random, for one), so allocation budgets run in
// the ordinary test run, not under -race; CI runs them both ways.
const raceEnabled = true
