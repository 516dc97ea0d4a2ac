package drive

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"lnk.dev/linkharness/store/durable"
)

// Churner is a unit whose agents can change while it runs, as `serve
// --agents FILE` reads its file again on SIGHUP.
type Churner interface {
	// Churn has the unit serve agents from now on: an agent it served that
	// is not among them leaves (stops as a graceful stop does), one among
	// them it did not serve joins. It returns once every joining agent
	// listens. An agent that left may not join again.
	Churn(ctx context.Context, agents []Agent) error
}

// maxLater bounds the listening lines kept for Churn.
const maxLater = 1024

// writeAgentsFile writes serve --agents' file whole: written beside it and
// renamed over it, so a SIGHUP never reads half a file.
func writeAgentsFile(path string, agents []Agent, sleepAfter time.Duration, maxTurns int) error {
	if err := durable.ReplaceFile(path, agentsFile(agents, sleepAfter, maxTurns), 0o600); err != nil {
		return fmt.Errorf("drive: agents file: %w", err)
	}
	return nil
}

// Churn implements Churner for a unit serving several agents.
func (u *linkUnit) Churn(ctx context.Context, agents []Agent) error {
	if u.file == "" {
		return fmt.Errorf("%w: agents join and leave only a unit serving several (serve --agents)", ErrUnsupported)
	}
	if len(agents) > maxLater {
		return fmt.Errorf("%w: %d agents, over %d", ErrUnsupported, len(agents), maxLater)
	}
	joining := map[string]Agent{}
	u.mu.RLock()
	for _, a := range agents {
		if _, ok := u.agents[a.Name]; !ok {
			joining[a.Name] = a
		}
	}
	u.mu.RUnlock()
	u.mu.Lock()
	u.all = append([]Agent(nil), agents...)
	u.mu.Unlock()
	if err := writeAgentsFile(u.file, agents, u.sleepAfter, u.maxTurns); err != nil {
		return err
	}
	if err := u.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("drive: SIGHUP to the harness: %w", err)
	}
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	for left := len(joining); left > 0; left-- {
		var l string
		select {
		case l = <-u.later:
		case <-u.done:
			return fmt.Errorf("drive: the harness ended while agents joined (%v)%s", u.waitErr, u.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("drive: %d joining agents not listening %v after the SIGHUP%s", left, StartTimeout, u.logTail())
		}
		name, addr, err := parseListening(l, true)
		if err != nil {
			return fmt.Errorf("drive: after the SIGHUP: %w", err)
		}
		a, ok := joining[name]
		if !ok {
			return fmt.Errorf("drive: after the SIGHUP, line %q names an agent not joining", l)
		}
		delete(joining, name)
		u.mu.Lock()
		u.agents[name] = &linkAgent{base: "http://" + addr, key: a.Key}
		u.mu.Unlock()
	}
	return nil
}
