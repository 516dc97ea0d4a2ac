//go:build race

package gcs_test

// raceEnabled: with the race detector the fake, which answers in the test
// process, and both racing processes run several times slower, so the race
// between processes runs a tenth of its turns; CI runs it whole without the
// detector (.ci/run).
const raceEnabled = true
