package measure

import (
	"time"

	"lnk.dev/linkharness/measure/report"
)

// TrustConfig is the measurement of the two figures Link Harness is judged
// by, made robust enough to reproduce within 20% from run to run on one
// machine: 1, 10 and 100 agents in one process each time (the slope of
// idle memory against the agents is what one more agent adds), 2 warm-up
// messages per agent, then 20 measured (2,220 in all, so the CPU per
// message is a mean over thousands), one at a time, and a quiet window of
// 3 s. No profile is written: profiling costs CPU of its own.
func TrustConfig(program string) Config {
	return Config{
		Program:  program,
		Agents:   []int{1, 10, 100},
		Layouts:  []report.Layout{report.Shared},
		Messages: 20,
		Warmup:   2,
		Idle:     3 * time.Second,
		// One at a time: a message's CPU is then its own, not shared
		// with the scheduling of others.
		Concurrency: 1,
	}
}
