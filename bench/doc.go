// Package bench holds the benchmarks that span packages, such as a whole
// turn from message to appended answer, and the committed baselines CI
// compares a short run with (benchstat). Benchmarks of one package live
// beside its code. bench/floor is the floor server, the least a warm
// harness does per message; BenchmarkMessageCPU and
// BenchmarkMessageSyscalls measure it and lnk-link-harness as processes in
// the same run, and BenchmarkMessageCPUPaired both at once, a message to
// each in turn.
package bench
