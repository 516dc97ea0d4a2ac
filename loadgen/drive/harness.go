package drive

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"lnk.dev/linkharness/loadgen/proc"
)

// ErrUnsupported comes from a Harness asked for something it cannot do,
// such as serving several agents in one process before it knows how.
var ErrUnsupported = errors.New("drive: unsupported")

// Harness starts the agents of one harness program for a measurement. Link
// Harness over HTTP (Link) is one; peer.Command (measure/peer), a harness
// driven by one command per message (`claude -p TEXT`), is another,
// measured by the same measure.Run.
type Harness interface {
	// Name is the harness's name as `lnk agent use --harness` takes it.
	Name() string

	// Start starts one unit serving agents, each from its own home, and
	// returns once every one of them takes messages. What it started ends
	// with the unit's Stop or Kill.
	Start(ctx context.Context, agents []Agent) (Unit, error)
}

// Agent is one agent to start: its name, its home folder, its key (and the
// file holding it), the model proxy it is to use, and a folder of the
// measurement's own beside the home (for logs and profiles).
type Agent struct {
	Name    string
	Home    string
	Key     string
	KeyFile string
	Model   string // base URL of the model proxy, as LNK_MODEL_PROXY takes it
	Scratch string
}

// Unit is what serves some agents: for Link Harness, one process. Its
// methods are safe for concurrent use.
type Unit interface {
	// PID is the process whose cost is measured, or 0 when none lives
	// between messages.
	PID() int

	// Send sends one message to agent's thread and returns once it is
	// answered.
	Send(ctx context.Context, agent, thread string, m Message) (Reply, error)

	// Stop ends the unit gracefully (the process writes its profile and
	// exits), and kills it if ctx ends first.
	Stop(ctx context.Context) error

	// Kill ends the unit at once; it is for a measurement that failed.
	Kill()
}

// Abilities some units have, found by type assertion.
type (
	// MetricsReader is a unit with a metrics page, per agent.
	MetricsReader interface {
		Metrics(ctx context.Context) (Metrics, error)
	}

	// Profiler is a unit that writes a CPU profile of its whole run once
	// stopped, at the path it returns.
	Profiler interface {
		CPUProfile() string
	}

	// UsageCounter is a unit with no process between messages, which
	// counts what its messages' commands cost itself: CPU and block I/O
	// summed in a proc.Sample, and the largest command's resident bytes.
	UsageCounter interface {
		Usage() proc.Sample
		PeakRSS() uint64
	}

	// IdleCloser is a unit whose client keeps connections to it between
	// messages; CloseIdle closes them, so the process's idle memory holds
	// no connection of the measurer's.
	IdleCloser interface {
		CloseIdle()
	}

	// IdleStarter is a unit whose idle cost is a program started for the
	// quiet window alone (an interactive harness in a terminal); its PID
	// is that program's from then on, its whole process tree sampled.
	IdleStarter interface {
		StartIdle(ctx context.Context) error
	}
)

// StatusError is a message answered with a status other than 200 OK: the
// status, its Retry-After, and the error the body says.
type StatusError struct {
	Code       int
	RetryAfter string // the header, as sent; "" without one
	Body       string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Body)
}

// Message is one message to an agent, as API.md's POST body has it.
type Message struct {
	ID   string
	Text string
}

// Reply is an agent's answer to a message, and how long the caller waited
// for it.
type Reply struct {
	Seq     int64
	Text    string
	Latency time.Duration
}
