//go:build race

package compact

// raceOn says the race detector is on: tests that decompress thousands
// of frames do a tenth of their work, since it makes them 30 times slower.
const raceOn = true
