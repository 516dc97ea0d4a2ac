//go:build race

package httpconn

// raceEnabled: the race detector changes how many allocations code makes
// (sync.Pool drops items at random, for one), so the allocation budget
// runs in the ordinary test run, not under -race.
const raceEnabled = true
