package drive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"time"
)

// Sleeper is a unit whose agents sleep ([serve] sleep_after): the
// process's own path to an asleep agent and, once every agent sleeps, to
// a collection and the memory given back, which nothing outside it can
// trigger otherwise.
type Sleeper interface {
	// SetSleepAfter serves the agents file again with sleep_after d
	// (SIGHUP) and returns once the process says it read it. An agent's
	// timer armed before keeps its old length until its next request.
	SetSleepAfter(ctx context.Context, d time.Duration) error

	// Touch sends agent a request that asks nothing of it (GET /, which
	// it refuses as no such path): it wakes the agent if asleep and arms
	// its sleep timer afresh, and makes no garbage to speak of (the
	// metrics page of a process of 1,000 agents is megabytes).
	Touch(ctx context.Context, agent string) error

	// AllAsleep is how many times the process said every agent sleeps and
	// their memory was given back, after a collection.
	AllAsleep() int

	// WaitAllAsleep returns once AllAsleep reaches n.
	WaitAllAsleep(ctx context.Context, n int) error
}

// sleepingUnit is a Link unit served from an agents file whose agents
// sleep: a Sleeper.
type sleepingUnit struct{ *linkUnit }

// The harness's log lines a Sleeper waits for.
const (
	lineReread    = `"agents file read again"`
	lineAllAsleep = `"every agent asleep: memory given back"`
)

// logPoll is how often a unit's log is read again while waiting for a line.
const logPoll = 50 * time.Millisecond

// SetSleepAfter implements Sleeper.
func (u sleepingUnit) SetSleepAfter(ctx context.Context, d time.Duration) error {
	if u.file == "" {
		return fmt.Errorf("%w: agent %s is served without an agents file", ErrUnsupported, u.agent.Name)
	}
	u.mu.Lock()
	u.sleepAfter = d
	all := u.all
	u.mu.Unlock()
	if err := writeAgentsFile(u.file, all, d, u.maxTurns); err != nil {
		return err
	}
	n := u.logCount(lineReread)
	if err := u.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("drive: agent %s: SIGHUP: %w", u.agent.Name, err)
	}
	return u.waitLog(ctx, lineReread, n+1)
}

// Touch implements Sleeper.
func (u sleepingUnit) Touch(ctx context.Context, agent string) error {
	u.mu.RLock()
	a, ok := u.agents[agent]
	u.mu.RUnlock()
	if !ok {
		return fmt.Errorf("drive: agent %s is not this unit's", agent)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/", nil)
	if err != nil {
		return err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return fmt.Errorf("drive: touching %s: %w", agent, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("drive: touching %s: %s, want 404 Not Found", agent, resp.Status)
	}
	return nil
}

// AllAsleep implements Sleeper.
func (u sleepingUnit) AllAsleep() int { return u.logCount(lineAllAsleep) }

// WaitAllAsleep implements Sleeper.
func (u sleepingUnit) WaitAllAsleep(ctx context.Context, n int) error {
	return u.waitLog(ctx, lineAllAsleep, n)
}

// logCount counts the lines of the process's log holding line.
func (u *linkUnit) logCount(line string) int {
	b, err := os.ReadFile(u.log)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(line))
}

// waitLog returns once the process's log holds line n times, or with an
// error if the process ends or ctx does first.
func (u *linkUnit) waitLog(ctx context.Context, line string, n int) error {
	t := time.NewTicker(logPoll)
	defer t.Stop()
	for u.logCount(line) < n {
		select {
		case <-t.C:
		case <-u.done:
			return fmt.Errorf("drive: agent %s: the harness ended waiting for %s (%v)%s", u.agent.Name, line, u.waitErr, u.logTail())
		case <-ctx.Done():
			return fmt.Errorf("drive: agent %s: waiting for %s: %w", u.agent.Name, line, ctx.Err())
		}
	}
	return nil
}
