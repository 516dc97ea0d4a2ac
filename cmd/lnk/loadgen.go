package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"lnk.dev/linkharness/loadgen"
)

// cmdLoadgen is `lnk loadgen`: many agents in one harness process, many
// conversations each, under load, on loopback.
func cmdLoadgen(fs flags, args []string, _ func(string) string) error {
	harness := fs.String("harness", "", "the lnk-link-harness program (default: on PATH, beside lnk, or built from the source tree)")
	agents := fs.Int("agents", 100, "agents in the one process")
	convs := fs.Int("conversations", 10, "conversations per agent")
	messages := fs.Int("messages", 10, "messages per conversation")
	concurrency := fs.Int("concurrency", 50, "conversations sent to at once")
	toolShare := fs.Float64("tool-share", 0, "the share of messages, 0 to 1, that make the model call a built-in tool server (memory__search, file__read) before answering; above 0 the memory and file servers are served for the agents")
	script := fs.String("script", "", "the scripted model's script (TOML: latency_ms, latency_ms_max, answer_bytes, answer_bytes_max…; default: 50-250 ms, 100-1500 bytes)")
	timeout := fs.Duration("timeout", 60*time.Second, "one message's limit")
	maxTime := fs.Duration("max-time", 10*time.Minute, "the whole run's limit")
	every := fs.Duration("sample-every", time.Second, "how often the harness's memory is sampled")
	settle := fs.Duration("settle", 0, "after the last answer, how long to leave the harness idle, still sampling its memory, before reading what it kept (at most 10m)")
	profile := fs.String("profile", "", "write the harness's CPU profile of the run to this file")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	churn := fs.Int("churn", 0, "once half the messages are answered, this many agents leave and as many new ones join, by one SIGHUP re-reading the agents file; the joining ones take the leaving ones' conversations over")
	soak := fs.Duration("soak", 0, "instead of measuring, soak one agent for this long (at most 1h): turns, tool calls, SIGKILLs of the harness, callers dropped and retried, checking its logs after each kill; exits non-zero on any violation")
	seed := fs.Uint64("seed", 0, "with --soak, the seed of its randomness (default: a random one, printed)")
	flood := fs.Int("flood", 0, "instead of measuring, send this many messages at once to one agent, each to its own conversation, the model answering in 2 to 3 s (or as --script says); those refused 503 are sent again after their Retry-After; exits non-zero on any other answer")
	maxTurns := fs.Int("max-turns", 500, "with --flood, the harness's --max-turns")
	textBytes := fs.Int("text-bytes", 0, "with --flood, each message's text is this long (default: a few words; at most 512 KiB)")
	if err := fs.parseAll(args); err != nil {
		return err
	}
	if *soak != 0 {
		return runSoak(*harness, *soak, *seed, *quiet, *jsonOut)
	}
	if *flood != 0 {
		return runFlood(loadgen.FloodConfig{Program: *harness, Messages: *flood, MaxTurns: *maxTurns, TextBytes: *textBytes}, *script, *quiet, *jsonOut)
	}
	cfg := loadgen.Config{
		Program: *harness, Agents: *agents, Conversations: *convs, Messages: *messages, Concurrency: *concurrency, ToolShare: *toolShare, Churn: *churn,
		Timeout: *timeout, MaxTime: *maxTime, SampleEvery: *every, Settle: *settle, Profile: *profile, Progress: os.Stderr,
	}
	if *quiet {
		cfg.Progress = nil
	}
	var err error
	if cfg.Script, err = readScript("loadgen", *script); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("loadgen: interrupted; the harness it started is stopped")
		}
		return err
	}
	if *jsonOut {
		err = res.WriteJSON(os.Stdout)
	} else {
		err = res.WriteTable(os.Stdout)
	}
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("loadgen: %d messages not answered; the first: %s", res.Errors, res.FirstError)
	}
	return err
}

// runSoak is `lnk loadgen --soak DURATION`.
func runSoak(harness string, d time.Duration, seed uint64, quiet, jsonOut bool) error {
	if seed == 0 {
		seed = rand.Uint64()
	}
	cfg := loadgen.SoakConfig{Program: harness, Duration: d, Seed: seed, Progress: os.Stderr}
	if quiet {
		cfg.Progress = nil
	}
	fmt.Fprintf(os.Stderr, "lnk loadgen: soak for %v, --seed %d\n", d, seed)
	_, err := runMode(func(ctx context.Context) (*loadgen.SoakResult, error) { return loadgen.Soak(ctx, cfg) }, jsonOut, func(res *loadgen.SoakResult) {
		fmt.Printf("soak of %.0f s, seed %d: %d turns (%d with a tool call), %d kills, %d drops, %d retries, %d refused, %d checks; violations: %d\n",
			res.Seconds, res.Seed, res.Turns, res.ToolTurns, res.Kills, res.Drops, res.Retries, res.Refused, res.Checks, len(res.Violations))
		for _, v := range res.Violations {
			fmt.Println("  " + v)
		}
	})
	return err
}

// runFlood is `lnk loadgen --flood N`.
func runFlood(cfg loadgen.FloodConfig, script string, quiet, jsonOut bool) error {
	if !quiet {
		cfg.Progress = os.Stderr
	}
	var err error
	if cfg.Script, err = readScript("loadgen", script); err != nil {
		return err
	}
	res, err := runMode(func(ctx context.Context) (*loadgen.FloodResult, error) { return loadgen.Flood(ctx, cfg) }, jsonOut, func(res *loadgen.FloodResult) {
		fmt.Printf("flood of %d messages at once, max_turns %d, in %.1f s: %d answered, %d refused 503 with Retry-After (%d sends again, %d answered then), %d otherwise\n",
			res.Messages, res.MaxTurns, res.Seconds, res.Answered, res.Refused, res.Retries, res.Later, res.Other)
		fmt.Printf("resident memory %.1f MB before, %.1f MB at peak: %.1f MB more (%.1f KiB a turn of the bound)\n",
			float64(res.Before)/1e6, float64(res.Peak)/1e6, float64(res.Growth)/1e6, float64(res.Growth)/1024/float64(res.MaxTurns))
		b, p, turns := res.RuntimeBefore, res.RuntimePeak, float64(res.MaxTurns)
		fmt.Printf("at the most: heap live %.1f MB more (%.1f KiB a turn), stacks %.1f MB more (%.1f KiB a turn), the collector's goal %.1f MB, %d goroutines\n",
			float64(p.Live-b.Live)/1e6, float64(p.Live-b.Live)/1024/turns, float64(p.Stacks-b.Stacks)/1e6, float64(p.Stacks-b.Stacks)/1024/turns, float64(p.Goal)/1e6, p.Goroutines)
		if res.FirstOther != "" {
			fmt.Println("  the first otherwise: " + res.FirstOther)
		}
	})
	if err == nil && res.Other > 0 {
		err = fmt.Errorf("loadgen: flood: %d messages answered otherwise than 200 or 503 with Retry-After", res.Other)
	}
	return err
}

// runMode runs one of loadgen's modes, soak or flood, until it ends or
// SIGINT or SIGTERM stops it, then prints what it found, if anything, as
// JSON or as table prints it. An interruption is said as one.
func runMode[R any](mode func(context.Context) (*R, error), jsonOut bool, table func(*R)) (*R, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := mode(ctx)
	if res != nil {
		if jsonOut {
			json.NewEncoder(os.Stdout).Encode(res)
		} else {
			table(res)
		}
	}
	if errors.Is(err, context.Canceled) {
		return res, errors.New("loadgen: interrupted; the harness it started is stopped")
	}
	return res, err
}
