//go:build race

package bench

// raceEnabled: the race detector changes how many allocations code makes,
// so allocation budgets run in the ordinary test run; CI runs both.
const raceEnabled = true
