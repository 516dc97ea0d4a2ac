package turn

import (
	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/harness/warm"
)

// Process is what the Runners of one process share; each field's zero
// value leaves a Runner to itself.
type Process struct {
	// Warm, when not nil, keeps what a conversation's turn composed for
	// its next turn in this process (see package warm). Nil: each turn
	// reads and composes all of it.
	Warm *warm.Cache

	// Turns, when not nil, bounds the turns in flight in the process: a
	// message that would begin a turn past it is budget.ErrFull, nothing of it written. A message that
	// steers a running turn takes no place. Nil: no bound.
	Turns *budget.Turns

	// Tracer, when not nil, gives each turn its spans (see package trace);
	// nil traces nothing.
	Tracer *trace.Tracer

	// Facts, when not nil, is the user's model facts as the process last
	// read them. Nil: the Runner keeps its own.
	Facts *facts.Cache

	// Models, when not nil, keeps the model clients the process's agents
	// call, made once for each proxy and key. Nil: made at each call.
	Models *model.Clients

	// Ends, when not nil, reads the end records of the turns running in
	// the process, so another process of the home can end them (see
	// package ending). Nil: only End in this process ends a turn.
	Ends *ending.Watcher
}
