package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/measure/peer"
	"lnk.dev/linkharness/measure/report"
)

// fakeHarness serves agents inside the test's own process, so Run's
// sampling reads the test process. It fails the messages whose text
// contains fail, and refuses to start agent refuse.
type fakeHarness struct {
	fail   string
	refuse string

	mu      sync.Mutex
	started int
	stopped int
	killed  int
}

func (h *fakeHarness) Name() string { return "fake" }

func (h *fakeHarness) Start(ctx context.Context, agents []drive.Agent) (drive.Unit, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range agents {
		if a.Name == h.refuse {
			return nil, fmt.Errorf("fake: refusing %s", a.Name)
		}
		if _, err := os.Stat(a.Home); err != nil {
			return nil, err
		}
		if b, err := os.ReadFile(a.KeyFile); err != nil || strings.TrimSpace(string(b)) != a.Key {
			return nil, fmt.Errorf("fake: key file of %s: %q, %v", a.Name, b, err)
		}
	}
	h.started++
	return &fakeUnit{h: h, turns: map[string]float64{}}, nil
}

type fakeUnit struct {
	h     *fakeHarness
	mu    sync.Mutex
	turns map[string]float64
}

func (u *fakeUnit) PID() int { return os.Getpid() }

func (u *fakeUnit) Send(ctx context.Context, agent, thread string, m drive.Message) (drive.Reply, error) {
	if thread != Thread {
		return drive.Reply{}, fmt.Errorf("thread %q", thread)
	}
	if u.h.fail != "" && strings.Contains(m.ID, u.h.fail) {
		return drive.Reply{}, errors.New("fake: failed as asked")
	}
	u.mu.Lock()
	u.turns[agent]++
	u.mu.Unlock()
	return drive.Reply{Seq: 2, Text: "ok", Latency: 2 * time.Millisecond}, nil
}

func (u *fakeUnit) Metrics(ctx context.Context) (drive.Metrics, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var b strings.Builder
	for agent, n := range u.turns {
		fmt.Fprintf(&b, "lnk_turns_total{agent=%q} %v\n", agent, n)
		fmt.Fprintf(&b, "lnk_turn_seconds_total{agent=%q} %v\n", agent, n*0.0015)
		fmt.Fprintf(&b, "lnk_model_call_seconds_total{agent=%q} %v\n", agent, n*0.0005)
		fmt.Fprintf(&b, "lnk_store_bytes_read_total{agent=%q} %v\n", agent, n*1000)
	}
	fmt.Fprintf(&b, "go_goroutines 5\n")
	return drive.ParseMetrics(strings.NewReader(b.String()))
}

func (u *fakeUnit) Stop(ctx context.Context) error {
	u.h.mu.Lock()
	u.h.stopped++
	u.h.mu.Unlock()
	return nil
}

func (u *fakeUnit) Kill() {
	u.h.mu.Lock()
	u.h.killed++
	u.h.mu.Unlock()
}

func TestRunFake(t *testing.T) {
	h := &fakeHarness{fail: "m3"}
	var progress strings.Builder
	res, err := Run(context.Background(), Config{
		Harness:  h,
		Agents:   []int{2, 3},
		Lengths:  []int{0, 10},
		Messages: 5,
		Idle:     10 * time.Millisecond,
		Dir:      t.TempDir(),
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	// plan: (0,2), (10,2), (0,3).
	if len(res.Cases) != 3 {
		t.Fatalf("%d cases, want 3", len(res.Cases))
	}
	if h.started != 7 || h.stopped != 7 || h.killed != 0 {
		t.Errorf("started %d, stopped %d, killed %d units; want 7, 7, 0", h.started, h.stopped, h.killed)
	}
	c := res.Cases[2]
	if c.Length != 0 || c.Agents != 3 || len(c.PerAgent) != 3 || c.PerAgent[2].Name != "agent-3" {
		t.Fatalf("third case: %+v", c)
	}
	if c.Messages != 12 || c.Errors != 3 || !strings.Contains(c.FirstError, "failed as asked") {
		t.Errorf("messages %d, errors %d (%q): want 12, 3", c.Messages, c.Errors, c.FirstError)
	}
	m := c.Median
	if m.PerMessage.Latency.P50 != 0.002 || m.PerMessage.Turn != 0.0015 || m.PerMessage.StoreRead != 1000 {
		t.Errorf("median per message: %+v", m.PerMessage)
	}
	if d := m.PerMessage.Added.P50 - 0.0015; d > 1e-12 || d < -1e-12 {
		t.Errorf("added p50 %v, want the latency less the model's share, 1.5 ms", m.PerMessage.Added.P50)
	}
	if m.Idle.RSS == 0 || m.Idle.PSS == 0 || m.Start.RSS == 0 || m.Idle.Goroutines != 5 {
		t.Errorf("median idle %+v start %+v", m.Idle, m.Start)
	}
	if res.Profile != nil {
		t.Error("a profile summary without profiles")
	}
	if !strings.Contains(progress.String(), "sending 5 messages to each of 3 agents") {
		t.Errorf("progress:\n%s", progress.String())
	}

	var table strings.Builder
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent-3", "median", "3 of 15 messages not answered"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	dir := t.TempDir()
	if err := res.WriteReport(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"result.json", "result.txt", "report.md", "cost-by-window.svg", "cost-by-agents.svg"} {
		if fi, err := os.Stat(dir + "/" + f); err != nil || fi.Size() == 0 {
			t.Errorf("report %s: %v", f, err)
		}
	}
}

func TestRunFailsCleanly(t *testing.T) {
	h := &fakeHarness{refuse: "agent-3"}
	dir := t.TempDir()
	_, err := Run(context.Background(), Config{Harness: h, Agents: []int{4}, Messages: 1, Idle: time.Millisecond, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "refusing agent-3") {
		t.Fatalf("err %v, want the refusal", err)
	}
	if h.killed != h.started {
		t.Errorf("%d units started, %d killed", h.started, h.killed)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// A warm-up message that fails ends the run.
	h = &fakeHarness{fail: "w1"}
	_, err = Run(context.Background(), Config{Harness: h, Agents: []int{2}, Messages: 1, Idle: time.Millisecond, Dir: dir})
	if err == nil || h.killed != 2 {
		t.Errorf("err %v, %d killed; want an error and both killed", err, h.killed)
	}

	// An ended context ends the run.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Harness: &fakeHarness{}, Dir: dir}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func TestConfigBounds(t *testing.T) {
	for _, c := range []Config{
		{Agents: []int{0}},
		{Agents: []int{maxAgents + 1}},
		{Lengths: []int{-1}},
		{Messages: -3},
		{Concurrency: -1},
		{Lengths: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, Agents: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err %v, want ErrConfig", c, err)
		}
	}
}

func TestPlan(t *testing.T) {
	got := fmt.Sprint(plan([]int{0, 1000, 100000}, []int{1, 10, 100}, []report.Layout{report.Each}, 1))
	if want := "[{0 1 1 each} {1000 1 1 each} {100000 1 1 each} {0 10 1 each} {0 100 1 each}]"; got != want {
		t.Errorf("plan %s, want %s", got, want)
	}
	if got := fmt.Sprint(plan([]int{0}, []int{3}, []report.Layout{report.Each}, 1)); got != "[{0 3 1 each}]" {
		t.Errorf("quick plan %s", got)
	}
	// Both layouts: one agent in each, the shared one from an agents file
	// as its many are; the lengths in the first layout.
	got = fmt.Sprint(plan([]int{0, 1000}, []int{1, 10, 100}, []report.Layout{report.Each, report.Shared}, 1))
	if want := "[{0 1 1 each} {1000 1 1 each} {0 10 1 each} {0 100 1 each} {0 1 1 shared} {0 10 10 shared} {0 100 100 shared}]"; got != want {
		t.Errorf("plan %s, want %s", got, want)
	}
}

// TestCommandHarness runs a command per message (sh, standing for a peer):
// its CPU is counted from the commands, its idle program's tree sampled.
func TestCommandHarness(t *testing.T) {
	h := &peer.Command{
		Label: "sh",
		First: []string{"sh", "-c", `test "$PEER" = "http://$MODEL" && echo "first: $1"`, "sh", "{text}"},
		Next:  []string{"sh", "-c", `cat "$HOME/peer.conf" >/dev/null && echo "next: $1"`, "sh", "{text}"},
		Idle:  []string{"sh", "-c", "sleep 30 & sleep 30"},
		Env:   []string{"PEER=http://{model}", "MODEL={model}"},
		Files: map[string]string{"peer.conf": "model = MODEL_ADDR\nworkspace = WORKSPACE\n"},
	}
	res, err := Run(context.Background(), Config{Harness: &fakeHarness{}, Agents: []int{1}, Messages: 1, Idle: time.Millisecond,
		Peers: []drive.Harness{h}, PeerMessages: 2, PeerIdle: 300 * time.Millisecond, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Peers) != 1 {
		t.Fatalf("peers %+v", res.Peers)
	}
	c := res.Peers[0].Case
	if c.Messages != 2 || c.Errors != 0 {
		t.Fatalf("%d answered, %d not: %s", c.Messages, c.Errors, c.FirstError)
	}
	a := c.Median
	if a.PerMessage.CPU <= 0 || a.PerMessage.PeakRSS <= 0 {
		t.Errorf("per message: %+v", a.PerMessage)
	}
	if a.Idle.RSS <= 0 {
		t.Errorf("idle memory of the idle program's tree: %+v", a.Idle)
	}
	var b strings.Builder
	res.WriteTable(&b)
	if !strings.Contains(b.String(), "side by side") {
		t.Errorf("table:\n%s", b.String())
	}
}
