//go:build !race

package gcs_test

const raceEnabled = false
