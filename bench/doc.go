// Package bench holds the benchmarks that span packages, such as a whole
// turn from message to appended answer, and the committed baselines CI
// compares a short run with (benchstat). Benchmarks of one package live
// beside its code.
package bench
