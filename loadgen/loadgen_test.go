package loadgen

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/measure"
)

func TestLastToken(t *testing.T) {
	for body, want := range map[string]string{
		`{"messages":[{"content":"Message lg-agent-1-2-3: please"}]}`:                               "lg-agent-1-2-3",
		`[{"text":"Message lg-agent-1-2-3: a"},{"text":"ok"},{"text":"Message lg-agent-1-2-4: b"}]`: "lg-agent-1-2-4",
		`{"messages":[{"content":"hello"}]}`:                                                        "",
		`Message lg-` + strings.Repeat("x", 100):                                                    "",
	} {
		if got := lastToken([]byte(body)); got != want {
			t.Errorf("lastToken(%.60q) = %q, want %q", body, got, want)
		}
	}
}

func TestConfigBounds(t *testing.T) {
	for _, c := range []Config{
		{Agents: -1},
		{Agents: maxAgents + 1},
		{Conversations: maxConversations + 1},
		{Agents: 1000, Conversations: 1000, Messages: 2},
		{Concurrency: -1},
		{SampleEvery: time.Microsecond},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err %v, want ErrConfig", c, err)
		}
	}
}

func TestDefaultScript(t *testing.T) {
	c := Config{}
	if err := c.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if r := c.Script.Rules; len(r) != 1 || r[0].LatencyMSMax != 250 || r[0].AnswerBytesMax != 1500 {
		t.Errorf("default script: %+v", r)
	}
}

// TestRun loads the real harness, built from this tree: 4 agents, 3
// conversations each, 4 messages each.
func TestRun(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds and runs the harness")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	program, err := measure.BuildHarness(ctx, t.TempDir())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip("the harness does not build:", err)
	}
	prof := t.TempDir() + "/cpu.pb.gz"
	res, err := Run(ctx, Config{Program: program, Agents: 4, Conversations: 3, Messages: 4, Concurrency: 5,
		SampleEvery: 50 * time.Millisecond, Profile: prof, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 48 || res.Errors != 0 {
		t.Fatalf("%d answered, %d errors (%s); want 48, 0", res.Messages, res.Errors, res.FirstError)
	}
	if res.Added.P99 <= 0 || res.Added.P50 > res.Added.P99 || res.Model.P50 < 0.05 || res.Latency.P50 < res.Model.P50 {
		t.Errorf("times: added %+v model %+v latency %+v", res.Added, res.Model, res.Latency)
	}
	if res.CPUPerMessage <= 0 || res.Throughput <= 0 || len(res.Memory) == 0 || res.Peak.RSS == 0 {
		t.Errorf("cpu %v, throughput %v, memory %+v", res.CPUPerMessage, res.Throughput, res.Memory)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("profile: %v", err)
	}
	var b strings.Builder
	res.WriteTable(&b)
	t.Logf("\n%s", b.String())
}
