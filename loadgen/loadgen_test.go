package loadgen

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive/drivetest"
	"lnk.dev/linkharness/loadgen/scripted"
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
		{ToolShare: -0.1},
		{ToolShare: 1.5},
		{Settle: -time.Second},
		{Settle: 11 * time.Minute},
		{Churn: -1},
		{Agents: 3, Churn: 3},
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

func TestToolMessage(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  string // a letter a message: m memory__search, f file__read, . none
	}{
		{0, "..........."},
		{0.3, "...m..f..m."},
		{0.5, ".m.f.m.f.m."},
		{1, "mfmfmfmfmfm"},
	} {
		var b strings.Builder
		for k := range len(tc.want) {
			switch toolMessage(k, tc.share) {
			case callMemory:
				b.WriteByte('m')
			case callFile:
				b.WriteByte('f')
			case "":
				b.WriteByte('.')
			default:
				b.WriteByte('?')
			}
		}
		if b.String() != tc.want {
			t.Errorf("share %v: %s, want %s", tc.share, b.String(), tc.want)
		}
	}
}

func TestWithTools(t *testing.T) {
	c := Config{}
	if err := c.setDefaults(); err != nil {
		t.Fatal(err)
	}
	s := withTools(c.Script)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(s.Rules) != 5 || len(c.Script.Rules) != 1 || s.Rules[4].Match != "any" {
		t.Fatalf("rules %+v", s.Rules)
	}
	for i, r := range s.Rules[:4] {
		if r.LatencyMS != 50 || r.LatencyMSMax != 250 {
			t.Errorf("rule %d: latency %d-%d ms, want the default's 50-250", i, r.LatencyMS, r.LatencyMSMax)
		}
	}
	if r := s.Rules[0]; r.Results != "no" || len(r.Calls) != 1 || r.Calls[0].Name != callMemory ||
		!strings.Contains(messageText("lg-a-1-1", callMemory), r.Match) {
		t.Errorf("memory's call rule: %+v", r)
	}
	if r := s.Rules[3]; r.Results != "yes" || r.Text != toolAnswer || r.AnswerBytesMax != 1500 ||
		!strings.Contains(messageText("lg-a-1-1", callFile), r.Match) {
		t.Errorf("file's answer rule: %+v", r)
	}
	if strings.Contains(messageText("lg-a-1-1", ""), askMemory) || strings.Contains(messageText("lg-a-1-1", ""), askFile) {
		t.Error("a plain message asks for a tool")
	}
	for text, want := range map[string]bool{toolAnswer + " lorem": true, toolAnswer[:5]: true, "": false, "ok: x": false} {
		if afterTool(text) != want {
			t.Errorf("afterTool(%q) = %v", text, !want)
		}
	}
}

func TestMain(m *testing.M) { drivetest.Main(m) }

// load runs cfg on the real harness, built from this tree, in a folder of
// the test's, and fails the test if the run fails. The result's table is
// logged once the test ends.
func load(t *testing.T, cfg Config) *Result {
	t.Helper()
	cfg.Program, cfg.Dir = drivetest.Harness(t), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var b strings.Builder
		res.WriteTable(&b)
		t.Logf("\n%s", b.String())
	})
	return res
}

// TestRun loads the real harness, built from this tree: 4 agents, 3
// conversations each, 4 messages each.
func TestRun(t *testing.T) {
	prof := t.TempDir() + "/cpu.pb.gz"
	res := load(t, Config{Agents: 4, Conversations: 3, Messages: 4, Concurrency: 5,
		SampleEvery: 50 * time.Millisecond, Settle: 100 * time.Millisecond, Profile: prof})
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
	if res.Settled == nil || res.Settled.RSS == 0 || res.SettleSeconds != 0.1 {
		t.Errorf("settled %+v after %v s, want the idle harness's memory after 0.1 s", res.Settled, res.SettleSeconds)
	}
}

// TestRunTools sends half of 24 messages through the tool servers: 3
// agents, 2 conversations each, 4 messages each. The servers must have
// answered every call the scripted model made, each saying its
// conversation, and every answer to a message asking for a tool be the one
// after its result.
func TestRunTools(t *testing.T) {
	res := load(t, Config{Agents: 3, Conversations: 2, Messages: 4, Concurrency: 4,
		ToolShare: 0.5, SampleEvery: 50 * time.Millisecond})
	if res.Messages != 24 || res.Errors != 0 {
		t.Fatalf("%d answered, %d errors (%s); want 24, 0", res.Messages, res.Errors, res.FirstError)
	}
	if res.ToolMessages != 12 || res.ToolCalls[callMemory] != 6 || res.ToolCalls[callFile] != 6 || len(res.ToolCalls) != 2 {
		t.Errorf("%d messages asked for a tool, the servers answered %v; want 12, 6 of each", res.ToolMessages, res.ToolCalls)
	}
	// Each call said its conversation: the servers saw every one that
	// asked for a tool, 3 agents' 2 each.
	if res.ToolConversations != 6 || res.ToolUnsaid != 0 {
		t.Errorf("the calls said %d conversations, %d calls said none; want 6, 0", res.ToolConversations, res.ToolUnsaid)
	}
	// A session of each tool for each agent: kept between turns.
	if res.ToolSessions < 6 || res.ToolPerSecond <= 0 || res.ToolTime.P50 <= 0 {
		t.Errorf("%d sessions, %v calls a second, a call's time %+v", res.ToolSessions, res.ToolPerSecond, res.ToolTime)
	}
	if res.AddedTools == nil || res.AddedPlain == nil || res.AddedTools.P50 <= 0 || res.AddedPlain.P50 <= 0 {
		t.Errorf("added: with tools %+v, without %+v", res.AddedTools, res.AddedPlain)
	}
}

// TestRunChurn has 2 of 6 agents leave and 2 join by one SIGHUP halfway
// through 72 messages: every message to an agent that stayed or joined is
// answered, and each one to a leaving agent is answered or refused before
// the harness read it (none in its logs, checked), none lost.
func TestRunChurn(t *testing.T) {
	res := load(t, Config{Agents: 6, Conversations: 2, Messages: 6, Concurrency: 6,
		Churn: 2, SampleEvery: 50 * time.Millisecond})
	c := res.Churn
	if c == nil || c.Left != 2 || c.Joined != 2 || c.At < 36 {
		t.Fatalf("churn %+v, want 2 left and 2 joined at half of 72", c)
	}
	if res.Messages != 72 || res.Errors != 0 {
		t.Errorf("%d answered, %d errors (%s); want 72, 0", res.Messages, res.Errors, res.FirstError)
	}
	for name, o := range map[string]Outcome{"stayed": c.Stayed, "left": c.Leaving, "joined": c.Joining} {
		if o.Errors != 0 || o.Answered+o.Refused != o.Sent {
			t.Errorf("agents that %s: %+v", name, o)
		}
	}
	if c.Stayed.Answered != 48 || c.Joining.Answered == 0 || c.Leaving.Answered+c.Joining.Answered != 24 {
		t.Errorf("stayed %+v, left %+v, joined %+v: want 48 answered by those that stayed, 24 by the others", c.Stayed, c.Leaving, c.Joining)
	}
}

// A flood past the bound on turns: every message is answered 200 or
// refused 503 with Retry-After, none otherwise, and every refused one is
// answered when sent again.
func TestFlood(t *testing.T) {
	script, err := scripted.ParseScript([]byte("[[rule]]\nmatch = \"\"\nlatency_ms = 1000\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Flood(context.Background(), FloodConfig{Program: drivetest.Harness(t), Dir: t.TempDir(), Messages: 40, MaxTurns: 8, Script: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Other != 0 || res.Answered+res.Refused != 40 || res.Refused == 0 || res.Later != res.Refused || res.Answered > 40-res.Refused {
		t.Errorf("40 messages at once, 8 turns let run: %+v", res)
	}
	// Its figures of memory are the harness's own, read from its
	// /metrics before and throughout: while 8 turns ran, it held more
	// goroutines than before. (What is live is 0 until the first
	// collection.)
	b, p := res.RuntimeBefore, res.RuntimePeak
	if b.Goal <= 0 || b.Stacks <= 0 || b.Goal < b.Live || p.Goroutines <= b.Goroutines || p.Live < b.Live || p.Stacks < b.Stacks {
		t.Errorf("the harness's memory, before the flood and the most while it ran: %+v, %+v", b, p)
	}
}

// A flood's message is "flood" and its id, and words after it up to the
// length asked, never past it.
func TestFloodText(t *testing.T) {
	for _, c := range []struct {
		id       string
		n, least int
	}{
		{"7", 0, 7}, {"7", 7, 7}, {"7", 12, 7}, {"7", 13, 13}, {"12", 65536, 65530},
	} {
		got := floodText(c.id, c.n)
		if !strings.HasPrefix(got, "flood "+c.id) || len(got) < c.least || (len(got) > c.n && c.n > len("flood "+c.id)) {
			t.Errorf("floodText(%q, %d) is %d bytes: %.40q", c.id, c.n, len(got), got)
		}
	}
}
