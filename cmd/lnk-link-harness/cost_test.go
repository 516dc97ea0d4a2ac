package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/fleet/fleettest"
)

// TestAsleepCost measures what an agent asleep costs the process: its
// resident memory, in one process of 1 agent and of LNK_ASLEEP_AGENTS
// (1,000 in BENCHMARKS.md), each asleep fresh and asleep again after it
// answered a message; the slope, per extra agent, is at most 8 KiB. Run
// with LNK_ASLEEP_AGENTS=1000 go test -run TestAsleepCost -v.
func TestAsleepCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LNK_ASLEEP_AGENTS"))
	if n < 2 {
		t.Skip("LNK_ASLEEP_AGENTS is not set to a count of agents over 1")
	}
	modelAddr := startModel(t)
	one, oneWorked := asleepRSS(t, 1, modelAddr)
	many, manyWorked := asleepRSS(t, n, modelAddr)
	fresh := float64(many-one) / float64(n-1)
	worked := float64(manyWorked-oneWorked) / float64(n-1)
	t.Logf("resident: 1 agent %d / %d KiB, %d agents %d / %d KiB (asleep fresh / after a message); per extra agent asleep: %.1f KiB fresh, %.1f KiB after a message",
		one, oneWorked, n, many, manyWorked, fresh, worked)
	if fresh > 8 || worked > 8 {
		t.Errorf("an agent asleep costs %.1f / %.1f KiB, over 8 KiB", fresh, worked)
	}
}

// asleepRSS serves n agents that sleep after a second, and returns the
// process's resident KiB once all sleep fresh, and once all sleep again
// after each answered one message.
func asleepRSS(t *testing.T, n int, modelAddr string) (fresh, worked int) {
	cmd, out, log := serveMany(t, "[serve]\nsleep_after = \"1s\"\n\n", n, modelAddr)
	defer terminate(cmd)
	addrs := out.addresses(t, n)
	allAsleep := func() {
		// Once all sleep, the process gives back what they let go of,
		// then says so.
		log.wait(t, "every agent asleep", `"every agent asleep: memory given back"`)
	}
	allAsleep()
	fresh = residentKiB(t, cmd.Process.Pid)
	for name, base := range addrs {
		code, _, err := fleettest.Post(oneShot, base, name, fleettest.Key(name), "t", `{"text":"hello"}`)
		if err != nil {
			t.Fatal(err)
		}
		if code != 200 {
			t.Fatalf("%s: %d", name, code)
		}
	}
	allAsleep()
	return fresh, residentKiB(t, cmd.Process.Pid)
}

// serveMany serves n agents, a0 to a(n-1), of an agents file of head and
// their entries, the model proxy at modelAddr and LNK_HOME the file's
// folder, with more flags of serve.
func serveMany(t *testing.T, head string, n int, modelAddr string, args ...string) (cmd *exec.Cmd, out, log lines) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.toml")
	writeAgents(t, path, head, agentNames(n)...)
	return startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr, "LNK_HOME=" + dir}, append([]string{"serve", "--agents", path}, args...)...)
}

// TestDenseCost measures what an agent costs the process at a density of
// LNK_DENSE_AGENTS agents (10,000 in BENCHMARKS.md), each on its own
// port: the process's descriptors and resident memory, against a process
// of one agent measured the same way, each agent awake after it answered a
// message (once the process let go of what its turns held), and asleep
// after it. Every agent answers (0 errors); the process holds at most its
// listeners and budget.Reserve descriptors, awake and asleep; an extra
// agent costs at most 6 KiB awake and 3 KiB asleep. Run with
// LNK_DENSE_AGENTS=10000 go test -run TestDenseCost -v -timeout 30m.
func TestDenseCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LNK_DENSE_AGENTS"))
	if n < 2 {
		t.Skip("LNK_DENSE_AGENTS is not set to a count of agents over 1")
	}
	modelAddr := startModel(t)
	type cost struct{ kib, fds int }
	measure := func(count int, asleep bool) cost {
		c := cost(denseCost(t, count, asleep, modelAddr))
		t.Logf("%d agents %s: %d KiB resident, %d descriptors", count, map[bool]string{true: "asleep", false: "awake"}[asleep], c.kib, c.fds)
		return c
	}
	for _, asleep := range []bool{false, true} {
		one, many := measure(1, asleep), measure(n, asleep)
		per := float64(many.kib-one.kib) / float64(n-1)
		most, state := 6.0, "awake after its message"
		if asleep {
			most, state = 3.0, "asleep"
		}
		t.Logf("per extra agent %s: %.2f KiB; descriptors %d, at most %d", state, per, many.fds, n+budget.Reserve)
		if per > most {
			t.Errorf("an agent %s costs %.2f KiB, over %.0f KiB", state, per, most)
		}
		if many.fds > n+budget.Reserve {
			t.Errorf("%d agents %s hold %d descriptors, over %d", n, state, many.fds, n+budget.Reserve)
		}
	}
}

// denseCost serves count agents, sends each one message, and returns the
// process's resident KiB and descriptors once it let go of what its turns
// held (awake), or once every agent slept again (asleep).
func denseCost(t *testing.T, count int, asleep bool, modelAddr string) struct{ kib, fds int } {
	head := "[serve]\nsleep_after = \"never\"\n\n"
	if asleep {
		head = "[serve]\nsleep_after = \"1s\"\n\n"
	}
	cmd, out, log := serveMany(t, head, count, modelAddr, "--idle-free", "1s", "--log-level", "debug")
	defer terminate(cmd)
	type agent struct{ name, base string }
	agents := make(chan agent, count)
	for name, base := range out.addresses(t, count) {
		agents <- agent{name, base}
	}
	close(agents)
	// Each agent one message, 50 at once, each on a connection of its own.
	errs := make(chan error, count)
	var wg sync.WaitGroup
	for range min(50, count) {
		wg.Go(func() {
			for a := range agents {
				code, _, err := fleettest.Post(oneShot, a.base, a.name, fleettest.Key(a.name), "t", `{"text":"hello"}`)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", a.name, err)
					continue
				}
				if code != 200 {
					errs <- fmt.Errorf("%s: %d", a.name, code)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%d agents: a message not answered: %v", count, err)
	}
	if asleep {
		log.wait(t, "every agent asleep", `"every agent asleep: memory given back"`)
	} else {
		log.wait(t, "the turns' hold let go of", `"idle: what the turns held let go of"`)
	}
	kib := residentKiB(t, cmd.Process.Pid)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return struct{ kib, fds int }{kib, len(fds)}
}
