package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/harness/fleet"
	"lnk.dev/linkharness/harness/server"
)

// serveFlags is serve's flags as given.
type serveFlags struct {
	home, listen, keyFile, agent, cpuProfile, agents, blank, logLevel string
	blankSleep, grace, idleFree                                       time.Duration
	exitAsleep                                                        bool
	maxTurns                                                          int
	set                                                               map[string]bool // the flags given
}

// parseServe parses serve's flags from args, refusing a negative duration.
func parseServe(args []string) (*serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lnk-link-harness serve --home DIR --key-file F [--listen ADDR] [--agent NAME]\n       lnk-link-harness serve --agents FILE\n       lnk-link-harness serve --blank CONTROL [--sleep-after D]\n\nServes the agents' turns over HTTP, printing \"listening on ADDR\" for each. It refuses to\nstart without a model proxy for an agent's provider (LNK_MODEL_PROXY, or\nLNK_MODEL_PROXY_<PROVIDER>), or with a [storage] conversations it cannot keep.\nWith --agents, SIGHUP reads the file again: agents join and leave. With --blank,\nit prints \"blank on CONTROL\" and serves nothing until one JSON line on the unix\nsocket CONTROL binds it to an agent; it ends once that agent sleeps.\n\nflags:")
		fs.PrintDefaults()
	}
	fl := &serveFlags{set: map[string]bool{}}
	fs.StringVar(&fl.home, "home", "", "the agent's home folder")
	fs.StringVar(&fl.listen, "listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	fs.StringVar(&fl.keyFile, "key-file", "", "a file holding the agent's key on one line")
	fs.StringVar(&fl.agent, "agent", "", "the agent's name (default: the home folder's name)")
	fs.StringVar(&fl.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file when stopped")
	fs.StringVar(&fl.agents, "agents", "", "serve many agents of one owner, from a TOML file of [[agent]] name, home, listen, key_file and [agent.env]; SIGHUP reads it again")
	fs.StringVar(&fl.blank, "blank", "", "start a blank unit bound by one line on this unix socket")
	fs.DurationVar(&fl.blankSleep, "sleep-after", fleet.DefaultSleepAfter, "with --blank, how long the bound agent answers nothing before it sleeps and the unit ends; 0 never")
	fs.StringVar(&fl.logLevel, "log-level", "info", "the least level logged, as JSON lines on stderr: debug, info, warn or error")
	fs.DurationVar(&fl.grace, "grace", 30*time.Second, "on SIGTERM or SIGINT, how long running turns may go on before they are ended (a second signal ends them at once)")
	fs.BoolVar(&fl.exitAsleep, "exit-when-asleep", false, "with --agents, end the process once every agent sleeps ([serve] sleep_after in the agents file)")
	fs.IntVar(&fl.maxTurns, "max-turns", 0, "the most turns in flight at once; past it a message is refused 503 with Retry-After (default: 256, lowered to what the descriptor limit leaves room for)")
	fs.DurationVar(&fl.idleFree, "idle-free", server.DefaultIdleFree, "once no turn has run for this long after the last one ended, give the memory the turns freed back to the system; 0 never")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if err := atLeast0("grace", fl.grace); err != nil {
		return nil, err
	}
	if err := atLeast0("idle-free", fl.idleFree); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { fl.set[f.Name] = true })
	return fl, nil
}

// options is what serve's flags ask to serve: the agents, when they sleep
// and whether the process ends once they all do, and the turns asked for
// at once (0: as the budget allows). The flags of one way of serving are
// refused with another's.
func (fl *serveFlags) options() (o fleet.Options, maxTurns int, err error) {
	maxTurns = fl.maxTurns
	switch {
	case fl.blank == "" && fl.set["sleep-after"]:
		return o, 0, errors.New("--sleep-after is for --blank; an agents file says [serve] sleep_after")
	case fl.blank != "":
		if fl.home != "" || fl.keyFile != "" || fl.agents != "" || fl.set["agent"] || fl.set["listen"] {
			return o, 0, errors.New("--blank takes its agent from the control line: give no --home, --key-file, --agents, --agent or --listen with it")
		}
		if err := atLeast0("sleep-after", fl.blankSleep); err != nil {
			return o, 0, err
		}
		// Bound, the unit ends when its agent sleeps.
		o.SleepAfter, o.ExitWhenAsleep = fl.blankSleep, fl.blankSleep > 0
	case fl.agents != "":
		if fl.set["max-turns"] {
			return o, 0, errors.New("--max-turns is for --home and --blank; an agents file says [serve] max_turns")
		}
		if fl.home != "" || fl.keyFile != "" {
			return o, 0, errors.New("--agents names every agent's home and key: give no --home or --key-file with it")
		}
		file, err := fleet.ReadAgents(fl.agents)
		if err != nil {
			return o, 0, err
		}
		o.Units, o.SleepAfter, maxTurns, o.AgentsFile = file.Units, file.SleepAfter, file.MaxTurns, fl.agents
		if fl.exitAsleep && o.SleepAfter == 0 {
			return o, 0, fmt.Errorf("--exit-when-asleep: the agents of %s never sleep ([serve] sleep_after = \"never\")", fl.agents)
		}
		o.ExitWhenAsleep = fl.exitAsleep
	case fl.exitAsleep:
		return o, 0, errors.New("--exit-when-asleep is for --agents, whose agents sleep")
	case fl.home == "" || fl.keyFile == "":
		return o, 0, errors.New("serve needs --home and --key-file, or --agents FILE")
	default:
		o.Units = []fleet.Unit{{Name: fl.agent, Home: fl.home, Listen: fl.listen, KeyFile: fl.keyFile}}
	}
	if fl.maxTurns < 0 || fl.set["max-turns"] && fl.maxTurns == 0 {
		return o, 0, fmt.Errorf("--max-turns %d: want 1 or more", fl.maxTurns)
	}
	return o, maxTurns, nil
}

// atLeast0 refuses a negative duration given to the flag name.
func atLeast0(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--%s %v: want a duration of 0 or more", name, d)
	}
	return nil
}
