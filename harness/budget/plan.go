package budget

import (
	"errors"
	"fmt"
)

// ErrNoRoom comes from Check when a process's agents and turns cannot fit
// under its descriptor limit; the error says what they need and how to
// raise the limit. Nothing is served.
var ErrNoRoom = errors.New("budget: the agents do not fit under the descriptor limit")

// The descriptors the plan counts. They are part of how a process is sized,
// so a change here is a change of what an operator sees at start.
const (
	// Reserve is the process's own, whatever it serves: standard input,
	// output and error, the runtime's poller, the waiter of every
	// listener, a control socket, a profile, an agents file read again,
	// the idle connections to the model proxy and to tool servers (at most
	// MaxIdleModel and MaxIdleTools), a file read in passing while an
	// agent wakes.
	Reserve = 64
	// PerTurn is the most a turn in flight holds at once, its caller's
	// connection aside: its conversation's folder, its log (and a
	// compact conversation's frames), its id index, its told record, its
	// copy for people, one file of its prompt being read, its model
	// connection, and its tools' connections, one a call of a round.
	PerTurn = 16
	// MaxIdleModel is how many idle connections to the model proxy the
	// process keeps for the turns after, within Reserve.
	MaxIdleModel = 16
	// MaxIdleTools is how many idle connections to its agents' tool
	// servers the process keeps, all of them together, within Reserve.
	MaxIdleTools = 16
	// DefaultMaxTurns bounds the turns in flight when neither the agents
	// file nor a flag says: a turn waiting on its model holds about
	// 32 KiB and PerTurn descriptors, so 256 of them hold 8 MiB and
	// 4,096 descriptors, and a machine's two cores are kept busy by far
	// fewer than that of turns that are not waiting.
	DefaultMaxTurns = 256
)

// Plan is what a process is sized for: its descriptor limit, its
// listeners, and the turns it lets run at once.
type Plan struct {
	Limit    int // the soft limit on open descriptors (RLIMIT_NOFILE), raised to the hard one
	Agents   int // the agents served, a listener each
	MaxTurns int // the turns in flight at most; 0 is the default, lowered to fit
}

// Sized returns p with MaxTurns set: the one asked for, or when none was,
// DefaultMaxTurns lowered to what the limit leaves room for (each turn
// its PerTurn and its caller's connection). It is ErrNoRoom when not one
// turn fits, or when the one asked for does not: the error says the
// agents, what they and the turns need, the limit, and how to raise it.
func (p Plan) Sized() (Plan, error) {
	free := p.Limit - p.Agents - Reserve
	if p.MaxTurns == 0 {
		p.MaxTurns = min(DefaultMaxTurns, free/(PerTurn+1))
		if p.MaxTurns >= 1 {
			return p, nil
		}
		p.MaxTurns = 1
	}
	if need := p.Need(); need > p.Limit {
		return p, fmt.Errorf("%w: %d agents need %d descriptors (a listener each, %d for the process, %d for each of %d turns in flight with its caller's connection), over the limit of %d: raise the limit (ulimit -n, or LimitNOFILE= in a systemd unit), serve fewer agents in this process, or lower max_turns",
			ErrNoRoom, p.Agents, need, Reserve, PerTurn+1, p.MaxTurns, p.Limit)
	}
	return p, nil
}

// Need is the descriptors p needs at the least: every listener, the
// Reserve, and for each turn in flight its own and its caller's
// connection.
func (p Plan) Need() int {
	return p.Agents + Reserve + p.MaxTurns*(PerTurn+1)
}

// Conns is how many callers' connections the process serves at once: a
// turn's own for each turn the bound lets run, a quarter as many again for
// messages that steer a running turn, are refused or wait for another, and
// a few for /healthz and /metrics; fewer where the descriptors left are
// fewer. A connection past it waits in its listener's queue, which costs
// the process nothing, rather than holding a goroutine and buffers here
// (about 16 KiB, while it is read and answered).
func (p Plan) Conns() int {
	left := p.Limit - p.Agents - Reserve - p.MaxTurns*PerTurn
	return max(1, min(left, p.MaxTurns+p.MaxTurns/4+connsSpare))
}

// connsSpare is the connections past the turns' that Conns always allows.
const connsSpare = 32

// Cached is how many descriptors caches may keep open between turns: what
// is left once the listeners, the Reserve, the turns and the connections
// are counted.
func (p Plan) Cached() int {
	return max(0, p.Limit-p.Agents-Reserve-p.MaxTurns*PerTurn-p.Conns())
}
