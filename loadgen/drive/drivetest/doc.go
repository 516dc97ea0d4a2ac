// Package drivetest gives the tests of loadgen and measure the harness
// they drive: lnk-link-harness built from this tree once per test binary
// (Harness), removed when the binary's tests end (Main). A test is skipped
// where the harness does not build, and with -short, but never in CI
// (CI=true), where it fails instead.
package drivetest
