package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"lnk.dev/linkharness/measure"
	"lnk.dev/linkharness/measure/peer"
	"lnk.dev/linkharness/measure/report"
)

// cmdMeasure is `lnk measure`: what each agent costs, idle and per
// message, on a harness it starts on temporary homes against the scripted
// model.
func cmdMeasure(fs flags, args []string, _ func(string) string) error {
	cfg := measure.Config{Progress: os.Stderr}
	fs.StringVar(&cfg.Program, "harness", "", "the lnk-link-harness program (default: on PATH, beside lnk, or built from the source tree)")
	agents := fs.String("agents", "3", "agents: a count, or counts separated by commas")
	layouts := fs.String("layout", "each", "how agents are put in processes: each (a process per agent), shared (all of a case's agents in one, serve --agents), or each,shared")
	lengths := fs.String("lengths", "0", "events already in each conversation: a length, or lengths separated by commas")
	fs.IntVar(&cfg.Messages, "messages", 0, fmt.Sprintf("messages measured per agent (default: %d in all in each case, shared among its agents)", measure.MinMessages))
	fs.IntVar(&cfg.Warmup, "warmup", 1, "messages each agent answers before its idle memory is read, not counted in CPU per message")
	fs.DurationVar(&cfg.Idle, "idle", 3*time.Second, "the quiet windows (awake after the warm-up, and asleep), for idle CPU")
	fs.IntVar(&cfg.Concurrency, "concurrency", 1, "messages in flight at once, over all agents")
	fs.DurationVar(&cfg.Timeout, "timeout", 60*time.Second, "one message's limit")
	fs.DurationVar(&cfg.MaxTime, "max-time", 30*time.Minute, "the whole run's limit")
	full := fs.Bool("full", false, "the full run: lengths 0,1000,100000 and agents 1,10,100, in both layouts")
	script := fs.String("script", "", "a script for the scripted model (TOML; default: answer every message at once)")
	fs.BoolVar(&cfg.Profile, "profile", false, "have the harness write CPU profiles and name the largest bottleneck (the profiler's own memory and CPU then count in the idle figures)")
	peerList := fs.String("peers", "", "measure these harnesses too, in the same run: names separated by commas ("+strings.Join(peer.Names(), ", ")+"), or all")
	peerBin := fs.String("peer-bin", "", "the folder holding the peers' programs (an npm install's node_modules/.bin; default: PATH)")
	floor := fs.Bool("floor", false, "measure the floor too, as a peer (bench/floor, the least a warm harness does per message, built from the source tree), and tell Link Harness's CPU per message as a ratio to it")
	fs.IntVar(&cfg.PeerMessages, "peer-messages", 5, "messages measured per peer, after one warm-up")
	fs.DurationVar(&cfg.PeerIdle, "peer-idle", 10*time.Second, "how long a peer's interactive program settles before, and then stays idle for, its idle sample")
	jsonOut := fs.Bool("json", false, "print the result as JSON instead of a table")
	reportDir := fs.String("report", "", "write report.md, result.json, result.txt and SVG plots into this folder")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the temporary folder (homes, logs, profiles)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.parseAll(args); err != nil {
		return err
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // none: 0 in a Config is the default
	}
	if *quiet {
		cfg.Progress = nil
	}
	if err := setCases(&cfg, *agents, *lengths, *layouts, *full); err != nil {
		return err
	}
	var err error
	if cfg.Script, err = readScript("measure", *script); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dirs, err := addPeers(ctx, &cfg, *peerList, *peerBin, *floor)
	defer removeAll(dirs)
	if err != nil {
		return err
	}
	res, err := measure.Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("measure: interrupted; every process it started is stopped")
		}
		return err
	}
	res.Command = "lnk measure " + strings.Join(args, " ")
	if *reportDir != "" {
		if err := res.WriteReport(*reportDir); err != nil {
			return err
		}
	}
	if *jsonOut {
		return res.WriteJSON(os.Stdout)
	}
	return res.WriteTable(os.Stdout)
}

// setCases sets cfg's counts of agents, lengths of conversation and
// layouts from their flags, or those of the full run.
func setCases(cfg *measure.Config, agents, lengths, layouts string, full bool) error {
	var err error
	if cfg.Agents, err = intList("agents", agents); err != nil {
		return err
	}
	if cfg.Lengths, err = intList("lengths", lengths); err != nil {
		return err
	}
	for _, l := range strings.Split(layouts, ",") {
		cfg.Layouts = append(cfg.Layouts, report.Layout(strings.TrimSpace(l)))
	}
	if full {
		cfg.Agents, cfg.Lengths = []int{1, 10, 100}, []int{0, 1000, 100000}
		cfg.Layouts = []report.Layout{report.Each, report.Shared}
	}
	return nil
}

// addPeers adds to cfg the peers list names ("all" for every one Find
// knows), their programs found in bin, and the floor when floor is set,
// before anything runs. A peer missing is said on stderr and told as not
// run. It returns the folders it made for them, to remove once the run
// is over, with any error.
func addPeers(ctx context.Context, cfg *measure.Config, list, bin string, floor bool) (dirs []string, err error) {
	if list != "" {
		names := strings.Split(list, ",")
		if list == "all" {
			names = peer.Names()
		}
		// A peer built here (crush) is built into a folder of the run's.
		dir, err := os.MkdirTemp("", "lnk-measure-peers-")
		if err != nil {
			return dirs, err
		}
		dirs = append(dirs, dir)
		for _, name := range names {
			name = strings.TrimSpace(name)
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "lnk measure: finding peer %s\n", name)
			}
			p, err := peer.Find(ctx, name, bin, dir)
			if errors.Is(err, peer.ErrMissing) {
				// Said before anything runs, and told as not run.
				fmt.Fprintf(os.Stderr, "lnk %v\n", err)
				cfg.NotRun = append(cfg.NotRun, measure.NotRun{Harness: name, Why: strings.TrimPrefix(err.Error(), peer.ErrMissing.Error()+": "+name+": ")})
				continue
			}
			if err != nil {
				return dirs, err
			}
			cfg.Peers = append(cfg.Peers, p)
		}
	}
	if floor {
		dir, err := os.MkdirTemp("", "lnk-measure-floor-")
		if err != nil {
			return dirs, err
		}
		dirs = append(dirs, dir)
		f, err := peer.BuildFloor(ctx, dir)
		if err != nil {
			return dirs, err
		}
		cfg.Peers = append(cfg.Peers, f)
	}
	return dirs, nil
}

// removeAll removes each of dirs.
func removeAll(dirs []string) {
	for _, d := range dirs {
		os.RemoveAll(d)
	}
}

// intList parses "3" or "1,10,100".
func intList(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("measure: --%s %q: want numbers separated by commas", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}
