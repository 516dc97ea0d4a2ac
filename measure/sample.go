package measure

import (
	"context"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
)

// sampleBefore scrapes each unit's metrics twice, so what one scrape
// allocates is known and taken off the messages' count, then samples its
// process: the span measured holds the messages and nothing else (a
// scrape of a process of 1,000 agents costs a fifth of a second).
func (r *caseRun) sampleBefore(ctx context.Context) error {
	return r.eachUnit(ctx, len(r.units), func(ctx context.Context, _ int, u *unitRun) (err error) {
		if u.span.scrape0, err = scrape(ctx, u); err != nil {
			return err
		}
		if u.span.scrape1, err = scrape(ctx, u); err != nil {
			return err
		}
		if u.span.before, err = u.sampleWork(); err != nil {
			return err
		}
		r.observe(u, PhaseSpanStart)
		return nil
	})
}

func (r *caseRun) sampleAfter(ctx context.Context) error {
	return r.eachUnit(ctx, len(r.units), func(ctx context.Context, _ int, u *unitRun) (err error) {
		if u.span.after, err = u.sampleWork(); err != nil {
			return err
		}
		r.observe(u, PhaseSpanEnd)
		u.span.scrape2, err = scrape(ctx, u)
		return err
	})
}

func scrape(ctx context.Context, u *unitRun) (drive.Metrics, error) {
	mr, ok := u.unit.(drive.MetricsReader)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return mr.Metrics(ctx)
}

// sampleIdle samples every unit at the start and end of one quiet window,
// begun gcWait after the last message, once the process collected its
// garbage and gave the memory back (`serve --idle-free`; no collection can
// be asked of it from outside). A unit whose idle cost is a program started
// for the window (IdleStarter) has it started first, and the window waited
// once more before sampling, for the program to settle.
func (r *caseRun) sampleIdle(ctx context.Context) error {
	var err error
	started := false
	for _, u := range r.units {
		if is, ok := u.unit.(drive.IdleStarter); ok {
			if err := is.StartIdle(ctx); err != nil {
				return err
			}
			started = true
		}
	}
	r.closeIdle()
	settle := r.gcWait
	if started {
		settle = r.cfg.Idle
	}
	r.pr.Phase("quiet for %v", settle+r.cfg.Idle)
	if err := r.wait(ctx, settle); err != nil {
		return err
	}
	for _, u := range r.units {
		if u.idle.start, err = u.sampleIdle(true); err != nil {
			return err
		}
		r.observe(u, PhaseWorked)
	}
	if err := r.wait(ctx, r.cfg.Idle); err != nil {
		return err
	}
	for _, u := range r.units {
		if u.idle.end, err = u.sampleIdle(true); err != nil {
			return err
		}
		// A process's memory right after its collection; a program
		// started for the window, at the window's end.
		u.idle.worked = u.idle.start
		if started {
			u.idle.worked = u.idle.end
		}
	}
	return nil
}

// sampleWork samples what a unit's messages cost so far: its process, or
// what a UsageCounter counted.
func (u *unitRun) sampleWork() (proc.Sample, error) {
	if uc, ok := u.unit.(drive.UsageCounter); ok {
		return uc.Usage(), nil
	}
	return proc.Read(u.unit.PID(), false)
}

// sampleIdle samples a unit's process for its memory and idle CPU: for a
// unit running a command per message, the whole tree of the program it
// runs idle; nothing (a zero sample) while no process lives.
func (u *unitRun) sampleIdle(memory bool) (proc.Sample, error) {
	pid := u.unit.PID()
	if pid == 0 {
		return proc.Sample{Time: time.Now()}, nil
	}
	if _, ok := u.unit.(drive.UsageCounter); ok {
		return proc.ReadTree(pid, memory)
	}
	return proc.Read(pid, memory)
}
