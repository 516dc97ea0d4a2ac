//go:build !race

package turn

const raceEnabled = false
