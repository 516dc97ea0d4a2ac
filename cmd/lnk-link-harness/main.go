// Command lnk-link-harness takes an LLM agent's turns for Link: a message
// comes in over HTTP, the turn reads what it needs of the conversation from
// the agent's home, calls the model through Link's model proxy, and appends
// every event once. What serving is lives in harness/fleet; main parses
// the flags, builds what the agents share and runs it.
//
//	lnk-link-harness serve --home DIR --listen ADDR --key-file F [--agent NAME]
//	lnk-link-harness serve --agents FILE
//	lnk-link-harness serve --blank CONTROL [--sleep-after D]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/fleet"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/harness/warm"
)

const usage = `usage: lnk-link-harness serve --home DIR --key-file F [--listen ADDR] [--agent NAME]
       lnk-link-harness serve --agents FILE
       lnk-link-harness serve --blank CONTROL [--sleep-after D]

Takes an agent's turns over HTTP. The model is reached through Link's model
proxy: LNK_MODEL_PROXY, or LNK_MODEL_PROXY_<PROVIDER> for one provider.
lnk-link-harness serve --help lists serve's flags.`

func main() {
	if len(os.Args) == 2 && isHelp(os.Args[1]) {
		fmt.Println(usage)
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := serve(os.Args[2:], os.Environ()); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "lnk-link-harness:", err)
		os.Exit(1)
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// serve serves the agents args name, in the environment environ: each
// agent opens its conversations through the store bridge its environment
// names, or through each driver's program.
func serve(args, environ []string) error {
	fl, err := parseServe(args)
	if err != nil {
		return err
	}
	log, err := newLogger(fl.logLevel)
	if err != nil {
		return err
	}
	o, turnsAsked, err := fl.options()
	if err != nil {
		return err
	}
	plan, err := budget.Plan{Limit: descriptorLimit(), Agents: max(1, len(o.Units)), MaxTurns: turnsAsked}.Sized()
	if err != nil {
		return err
	}
	// What the process's turns composed, kept for each conversation's
	// next turn while it is in use: let go of when the process goes idle
	// and when an agent sleeps. What it keeps open between turns is
	// counted in the budget.
	cache := &warm.Cache{Pool: budget.NewPool(plan.Cached())}
	o.Shared = newShared(environ, log, cache, budget.NewTurns(plan.MaxTurns))
	// Traces, with the standard OTEL_* variables set; without them the
	// tracer is nil and a turn's spans cost nothing.
	tracer, stopTraces, err := trace.New(fleet.Lookup(environ), trace.Options{Log: log, Errors: traceErrors()})
	if err != nil {
		return err
	}
	defer stopTraces(context.Background())
	o.Tracer = tracer
	opts := server.Options{Log: log, Warm: cache, CloseIdle: o.CloseIdle, Metrics: o.Metrics, Turns: o.Turns}
	if fl.idleFree > 0 {
		opts.FreeMemory, opts.IdleFree = freeMemory, fl.idleFree
		o.FreeMemory, o.IdleFree = freeMemory, fl.idleFree
	}
	if o.Server, err = server.New(opts); err != nil {
		return err
	}
	o.Plan, o.Out, o.Grace = plan, os.Stdout, fl.grace
	// The signals are caught before the first "listening on" line: a
	// supervisor may stop the process as soon as it reads one, and a SIGTERM
	// before Notify would end it at once, with nothing stopped gracefully.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(stop)
	o.Stop = stop
	if fl.agents != "" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		o.Reload = hup
	}
	if fl.blank != "" {
		if o.Control, err = fleet.ListenControl(fl.blank); err != nil {
			return fmt.Errorf("--blank: %w", err)
		}
		defer o.Control.Close()
	}
	if fl.cpuProfile != "" {
		pf, err := os.Create(fl.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	return fleet.Run(o)
}
