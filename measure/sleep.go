package measure

import (
	"context"
	"sync"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
)

// The sleeps a Sleeper unit is served with: long enough that no agent
// sleeps while measured awake, and short when the agents are put to sleep.
const (
	awakeSleepAfter = 24 * time.Hour
	soonSleepAfter  = time.Second
)

// sleepAll puts every agent of every Sleeper unit to sleep and samples
// the process once it says all sleep and their memory went back to the
// system (after a collection): its sleep_after made short and each agent
// touched, so each timer is armed with it; then sleep_after is a day
// again, so no agent sleeps between the messages to come. After the
// warm-up (PhaseAsleepWorked) a quiet window asleep follows, for idle
// CPU. A case of other units does nothing.
func (r *caseRun) sleepAll(ctx context.Context, p Phase) error {
	var sleepers []*unitRun
	for _, u := range r.units {
		if _, ok := u.unit.(drive.Sleeper); ok {
			sleepers = append(sleepers, u)
		}
	}
	if len(sleepers) == 0 {
		return nil
	}
	r.pr.Phase("every agent asleep (%s)", p)
	err := r.eachUnit(ctx, startAtOnce, func(ctx context.Context, _ int, u *unitRun) error {
		sl, ok := u.unit.(drive.Sleeper)
		if !ok {
			return nil
		}
		n := sl.AllAsleep()
		if err := sl.SetSleepAfter(ctx, soonSleepAfter); err != nil {
			return err
		}
		for _, ai := range u.agents {
			if err := sl.Touch(ctx, r.agents[ai].Name); err != nil {
				return err
			}
		}
		if err := sl.WaitAllAsleep(ctx, n+1); err != nil {
			return err
		}
		s, err := u.sampleIdle(true)
		if err != nil {
			return err
		}
		if p == PhaseAsleepFresh {
			u.asleep.fresh = s
		} else {
			u.asleep.worked = s
		}
		// Awake for the messages once they come, and kept so: an agent
		// asleep between them would be measured waking.
		if err := sl.SetSleepAfter(ctx, awakeSleepAfter); err != nil {
			return err
		}
		// The quiet window starts once the harness has read its agents
		// file again: that reading is the measurer's, not idle CPU.
		u.asleep.from, err = u.sampleIdle(true)
		return err
	})
	if err != nil {
		return err
	}
	for _, u := range sleepers {
		r.observe(u, p)
	}
	if p != PhaseAsleepWorked {
		return nil
	}
	if err := r.wait(ctx, r.cfg.Idle); err != nil {
		return err
	}
	for _, u := range sleepers {
		if u.asleep.end, err = u.sampleIdle(true); err != nil {
			return err
		}
	}
	return nil
}

// wakeAll sends every agent of every Sleeper unit, all asleep, one more
// message, and counts those answered.
func (r *caseRun) wakeAll(ctx context.Context) error {
	var sleepers bool
	for _, u := range r.units {
		_, ok := u.unit.(drive.Sleeper)
		sleepers = sleepers || ok
	}
	if !sleepers {
		return nil
	}
	r.pr.Phase("waking every agent with a message")
	var mu sync.Mutex
	return r.eachUnit(ctx, len(r.units), func(ctx context.Context, _ int, u *unitRun) error {
		if _, ok := u.unit.(drive.Sleeper); !ok {
			return nil
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range min(r.cfg.Concurrency, len(u.agents)) {
			wg.Go(func() {
				for ai := range jobs {
					mctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
					_, err := u.unit.Send(mctx, r.agents[ai].Name, Thread, drive.Message{
						ID: "z1", Text: "Hello again, after a sleep. Please answer briefly."})
					cancel()
					mu.Lock()
					if err != nil {
						u.asleep.wakeErrors++
						if u.asleep.firstWakeErr == "" {
							u.asleep.firstWakeErr = err.Error()
						}
					} else {
						u.asleep.woken++
					}
					mu.Unlock()
				}
			})
		}
		for _, ai := range u.agents {
			select {
			case jobs <- ai:
			case <-ctx.Done():
			}
		}
		close(jobs)
		wg.Wait()
		return ctx.Err()
	})
}
