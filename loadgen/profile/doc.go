// Package profile reads the CPU profiles the harness processes write when
// stopped (serve --cpuprofile) and says where their time went: Summarize
// merges them and ranks the functions by flat and by cumulative time,
// leaving out the scheduler's idle spinning and the frames on every stack,
// and names the largest bottleneck with the nearest function of Link
// Harness's own code beneath it. `lnk measure` and `lnk loadgen` report
// it.
package profile
