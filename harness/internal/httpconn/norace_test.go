//go:build !race

package httpconn

const raceEnabled = false
