//go:build !race

package compact

const raceOn = false
