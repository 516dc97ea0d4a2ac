package measure

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/profile"
	"lnk.dev/linkharness/measure/peer"
	"lnk.dev/linkharness/measure/report"
)

// Run measures what each agent of the harness costs, idle and per
// message, in each case of cfg. Everything it starts is stopped before it
// returns, killed if ctx ends or the run fails.
func Run(ctx context.Context, cfg Config) (*report.Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxTime)
	defer cancel()
	pr := newProgress(cfg.Progress)
	defer pr.Done()

	tmp, err := os.MkdirTemp(cfg.Dir, "lnk-measure-")
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	if cfg.Keep {
		defer pr.Phase("kept %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	h, program, err := harnessOf(ctx, &cfg, tmp, pr)
	if err != nil {
		return nil, err
	}
	hs := harnesses{each: h, shared: h}
	if l, ok := h.(*drive.Link); ok {
		sl := *l
		sl.SleepAfter = awakeSleepAfter
		hs.shared = &sl
	}
	m, err := startModel(cfg.Script)
	if err != nil {
		return nil, err
	}
	defer m.close()

	res := newResult(&cfg, h.Name(), program, started)
	profiles, err := runCases(ctx, &cfg, hs, m, pr, tmp, res)
	if err != nil {
		return nil, err
	}
	if err := runPeers(ctx, &cfg, m, pr, tmp, res); err != nil {
		return nil, err
	}
	if len(profiles) > 0 {
		pr.Phase("reading %d CPU profiles", len(profiles))
		s, err := profile.Summarize(profiles, cfg.Top)
		if err != nil {
			return nil, err
		}
		res.Profile = s
	}
	res.Marginal = report.Marginals(res.Cases, cfg.Layouts)
	res.Seconds = time.Since(started).Seconds()
	return res, nil
}

// harnessOf returns the harness to measure and its program: cfg.Harness
// when given, else Link Harness, its program found (or built into tmp).
func harnessOf(ctx context.Context, cfg *Config, tmp string, pr *progress) (drive.Harness, string, error) {
	if cfg.Harness != nil {
		return cfg.Harness, cfg.Program, nil
	}
	pr.Phase("finding %s", drive.ProgramName)
	p, built, err := drive.FindHarness(ctx, cfg.Program, tmp)
	if err != nil {
		return nil, "", err
	}
	if built {
		pr.Phase("built %s", p)
	}
	return &drive.Link{Program: p, Profile: cfg.Profile, IdleFree: idleFree}, p, nil
}

// newResult is a run's Result before any case: what was measured, where
// and how.
func newResult(cfg *Config, harness, program string, started time.Time) *report.Result {
	return &report.Result{
		Version: report.ResultVersion,
		Harness: harness,
		Program: program,
		Started: started.UTC(),
		Machine: machine(),
		Settings: report.Settings{
			Messages: cfg.Messages, Warmup: cfg.Warmup, Concurrency: cfg.Concurrency,
			IdleSeconds: cfg.Idle.Seconds(), Lengths: cfg.Lengths, Agents: cfg.Agents,
			AgentsPerProcess: cfg.AgentsPerProcess, Layouts: cfg.Layouts, Thread: Thread, Profiled: cfg.Profile,
		},
	}
}

// harnesses are the harness a case runs on, by layout: Link Harness in
// the layout Shared is served from an agents file whose agents sleep.
type harnesses struct{ each, shared drive.Harness }

// runCases measures each case of cfg's plan in turn, each in a folder of
// its own under tmp, adds them to res, and returns the CPU profiles the
// processes wrote.
func runCases(ctx context.Context, cfg *Config, hs harnesses, m *model, pr *progress, tmp string, res *report.Result) ([]string, error) {
	var profiles []string
	for i, cs := range plan(cfg.Lengths, cfg.Agents, cfg.Layouts, cfg.AgentsPerProcess) {
		h := hs.each
		if cs.Layout == report.Shared {
			h = hs.shared
		}
		r := &caseRun{cfg: cfg, spec: cs, h: h, model: m, pr: pr, index: i, messages: cfg.Messages,
			dir: filepath.Join(tmp, fmt.Sprintf("case%d-len%d-agents%d-%s", i+1, cs.Length, cs.Agents, cs.Layout))}
		if r.messages == 0 {
			r.messages = max(1, ceilDiv(MinMessages, cs.Agents))
		}
		if l, ok := h.(*drive.Link); ok && l.IdleFree > 0 {
			r.gcWait = l.IdleFree + gcMargin
		}
		c, err := r.run(ctx)
		if err != nil {
			return nil, err
		}
		res.Cases = append(res.Cases, c)
		profiles = append(profiles, r.profiles...)
		if !cfg.Keep {
			// The homes can be large (100,000 events each); the profiles
			// stay for the summary.
			os.RemoveAll(filepath.Join(r.dir, "agents"))
		}
	}
	return profiles, nil
}

// runPeers measures each of cfg.Peers as one agent with a short
// conversation, against the same model, and adds them to res.
func runPeers(ctx context.Context, cfg *Config, m *model, pr *progress, tmp string, res *report.Result) error {
	for i, ph := range cfg.Peers {
		pcfg := *cfg
		pcfg.Messages, pcfg.Warmup, pcfg.Idle, pcfg.Concurrency = cfg.PeerMessages, 1, cfg.PeerIdle, 1
		pcfg.Observe = nil
		if _, ok := ph.(*peer.Floor); ok {
			// The floor's CPU per message stands beside Link Harness's, so
			// it is a mean over as many messages.
			pcfg.Messages = cmp.Or(cfg.Messages, MinMessages)
			// Its idle CPU is the Go runtime's own, beside Link
			// Harness's over the same quiet window.
			pcfg.Idle = cmp.Or(cfg.Idle, pcfg.Idle)
		}
		pr.Phase("peer %s", ph.Name())
		r := &caseRun{cfg: &pcfg, spec: caseSpec{Length: 0, Agents: 1, PerProcess: 1, Layout: report.Each}, h: ph, model: m, pr: pr,
			index: -1, messages: pcfg.Messages, dir: filepath.Join(tmp, fmt.Sprintf("peer%d-%s", i+1, ph.Name()))}
		c, err := r.run(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("measure: peer %s: %w", ph.Name(), err)
			}
			// A peer that fails is told as not run, with why; the rest
			// of the run stands.
			res.Peers = append(res.Peers, report.PeerResult{Harness: ph.Name(), NotRun: err.Error()})
			continue
		}
		pres := report.PeerResult{Harness: ph.Name(), Messages: pcfg.Messages, IdleSeconds: pcfg.Idle.Seconds(), Case: c}
		if cmd, ok := ph.(*peer.Command); ok {
			pres.Version = cmd.Version
			pres.Program = cmd.First[0]
		}
		res.Peers = append(res.Peers, pres)
	}
	for _, n := range cfg.NotRun {
		res.Peers = append(res.Peers, report.PeerResult{Harness: n.Harness, NotRun: n.Why})
	}
	return nil
}

func machine() report.Machine {
	m := report.Machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
