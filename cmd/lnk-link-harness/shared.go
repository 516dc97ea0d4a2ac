package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/fleet"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/store"
)

// newShared is what the agents of a process share: the environment main
// read, the logger, the warm cache, the bound on turns, the clients of the
// model proxy and tool servers, the model clients, the model facts, the histograms, the
// watcher of end records, and how
// an agent's conversations are opened and its key read.
func newShared(environ []string, log *slog.Logger, cache *warm.Cache, turns *budget.Turns) fleet.Shared {
	return fleet.Shared{
		Environ: environ, Log: log, Warm: cache, Turns: turns,
		// The process's one client of the model proxy, speaking HTTP/1.1
		// on the turn's goroutine (model.Transport): a kept connection
		// costs no goroutine, and the idle ones, at most
		// budget.MaxIdleModel, are the process's, not an agent's each.
		Model: &http.Client{Transport: &model.Transport{MaxIdle: budget.MaxIdleModel, IdleTimeout: 30 * time.Second}},
		// The process's pool of connections to its agents' tool servers,
		// on net/http, whose every part mcp-go's clients use. A kept MCP
		// session is its server's, named by its session id, not a
		// connection's, so agents may share the pool: its idle connections
		// are the process's, at most budget.MaxIdleTools, not an agent's
		// each.
		Tools: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: budget.MaxIdleTools,
			MaxIdleConnsPerHost: budget.MaxIdleTools, IdleConnTimeout: 30 * time.Second}},
		Models:  &model.Clients{},
		Facts:   &facts.Cache{},
		Metrics: new(metrics.Process),
		Ends:    &ending.Watcher{Log: log},
		Stores:  openerOf,
		ReadKey: readKey,
	}
}

// openerOf is an agent's opener of its conversations: the store bridge its
// environment names (or its binding's), or each driver's program.
func openerOf(r fleet.Reach) (fleet.Opener, error) {
	o, err := stores.FromEnv(r.Getenv)
	if err != nil {
		return nil, err
	}
	if r.Bridge != "" {
		o.Bridge, o.BridgeKey = r.Bridge, r.BridgeKey
	}
	o.Synced, o.Log, o.Environ = r.Synced, r.Log, r.Environ
	return o, nil
}

func readKey(path string) (string, error) {
	key, err := cli.ReadKey(path)
	if err != nil {
		return "", fmt.Errorf("--key-file: %w", err)
	}
	if key == "" || strings.ContainsAny(key, "\n\r") {
		return "", fmt.Errorf("--key-file %s: want the key on one line", path)
	}
	if len(key) < 16 {
		return "", fmt.Errorf("--key-file %s: a key of %d bytes is too short (16 at least)", path, len(key))
	}
	return key, nil
}

// descriptorLimit is the process's limit on open descriptors, its soft
// limit raised to the hard one (as Go does at start on Linux; done again
// here where it did not).
func descriptorLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return int(min(lim.Cur, 1<<30))
}

// freeMemory gives the heap a burst of turns freed back to the system. The
// first collection moves what sync.Pools hold (the HTTP server's buffers,
// the turns' windows) to their victim caches, the second frees it, and
// FreeOSMemory's own collection then returns every free page at once
// rather than at the background scavenger's pace.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// newLogger is the process's one logger: JSON lines on stderr from level
// on.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// traceErrors are the failures a span names by their words (error.type);
// any other is _OTHER, so no error's own text, which may quote what a
// provider or a tool was sent, reaches a span.
func traceErrors() []error {
	return []error{
		model.ErrTooLong, model.ErrUnavailable, model.ErrCut, model.ErrStalled, model.ErrMalformed,
		model.ErrTooLarge, model.ErrTimeout, model.ErrUnreachable, turn.ErrToolFailed, turn.ErrTimeout,
		turn.ErrStopped, turn.ErrEnded, turn.ErrBusy, budget.ErrFull, store.ErrSeqTaken, store.ErrCorrupt,
	}
}
