// Package proc reads what Linux says of a running process: its CPU time,
// its memory and its I/O, from /proc (through prometheus/procfs) and the
// process's CPU-time clock. `lnk measure` and `lnk loadgen` both sample the
// harness processes they start with it; it imports nothing else of Link
// Harness's.
//
// Read takes one process at one moment (Sample); ReadTree sums a process
// and every process below it, for a harness that runs its work in
// children, found by Descendants; CPUSeconds is the CPU time between two
// samples of one process.
// Sizes are bytes, CPU time nanoseconds or clock ticks as Sample says.
//
// Memory (RSS, PSS and anonymous bytes from smaps_rollup) is read only when
// asked for, since the kernel walks every mapping to answer; without it,
// RSS is stat's resident size and PSS and Anon are 0.
package proc
