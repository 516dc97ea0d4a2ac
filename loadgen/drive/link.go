package drive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Link is Link Harness as measure and loadgen drive it: `lnk-link-harness serve`
// serving one agent (--home) or several (--agents FILE) in one process,
// messages over its HTTP API, its /metrics page, and the CPU profile it
// writes when stopped.
type Link struct {
	Program string // the lnk-link-harness program
	Profile bool   // have each process write a CPU profile

	// IdleFree, over 0, is passed as `serve --idle-free`: how long after
	// the last turn the process collects its garbage and gives the memory
	// back, so what is sampled after that is the memory after a GC.
	IdleFree time.Duration

	// SleepAfter, over 0, serves every unit (one agent too) from an agents
	// file whose [serve] sleep_after it is; the unit is then a Sleeper.
	SleepAfter time.Duration

	// MaxTurns, over 0, bounds the turns in flight: `serve --max-turns`,
	// or an agents file's [serve] max_turns.
	MaxTurns int
}

// Name implements Harness.
func (l *Link) Name() string { return "link" }

// StartTimeout bounds how long a unit may take to start: for Link, how
// long its process may take to say where it listens.
const StartTimeout = 30 * time.Second

// Start implements Harness: it starts one process serving the agents, one
// agent with `serve --home`, several with `serve --agents FILE` (each on
// its own port, as itself), the file written in the first agent's scratch
// folder.
func (l *Link) Start(ctx context.Context, agents []Agent) (Unit, error) {
	if len(agents) == 0 {
		return nil, fmt.Errorf("%w: a unit of no agents", ErrUnsupported)
	}
	a := agents[0]
	var args []string
	u := &linkUnit{agent: a, agents: map[string]*linkAgent{}, done: make(chan struct{}), all: agents, sleepAfter: l.SleepAfter, maxTurns: l.MaxTurns}
	for _, ag := range agents {
		u.agents[ag.Name] = &linkAgent{key: ag.Key}
	}
	if len(agents) == 1 && l.SleepAfter <= 0 {
		args = []string{"serve", "--home", a.Home, "--listen", "127.0.0.1:0", "--key-file", a.KeyFile}
	} else {
		u.file = filepath.Join(a.Scratch, "agents.toml")
		if err := writeAgentsFile(u.file, agents, l.SleepAfter, l.MaxTurns); err != nil {
			return nil, err
		}
		args = []string{"serve", "--agents", u.file}
	}
	if l.MaxTurns > 0 && u.file == "" {
		args = append(args, "--max-turns", strconv.Itoa(l.MaxTurns))
	}
	if l.IdleFree > 0 {
		args = append(args, "--idle-free", l.IdleFree.String())
	}
	if l.Profile {
		u.profile = filepath.Join(a.Scratch, "cpu.pprof")
		args = append(args, "--cpuprofile", u.profile)
	}
	logPath := filepath.Join(a.Scratch, "stderr.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("drive: agent %s: %w", a.Name, err)
	}
	defer logf.Close()
	u.log = logPath
	cmd := exec.Command(l.Program, args...)
	cmd.Env = HarnessEnv(os.Environ(), a.Model)
	cmd.Dir = a.Scratch
	cmd.Stderr = logf
	// Its own process group, so a ^C at the terminal reaches the measuring
	// program alone, which stops it in order; and killed if that dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("drive: agent %s: %w", a.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("drive: starting %s for agent %s: %w", l.Program, a.Name, err)
	}
	u.cmd = cmd
	go func() {
		u.waitErr = cmd.Wait()
		close(u.done)
	}()
	if err := u.readListening(ctx, stdout, agents); err != nil {
		u.Kill()
		return nil, err
	}
	u.client = &http.Client{
		// Connections kept and used again, as a caller sending message
		// after message does: a connection's cost is the first message's
		// alone. Each agent listens on its own port, so the bound is per
		// agent: as many idle as senders run at once against one agent.
		Transport: &http.Transport{Proxy: nil, MaxIdleConns: 0, MaxIdleConnsPerHost: 64},
	}
	if l.SleepAfter > 0 {
		return sleepingUnit{u}, nil
	}
	return u, nil
}

// agentsFile is serve --agents' TOML file naming agents, with [serve]
// sleep_after and max_turns when over 0.
func agentsFile(agents []Agent, sleepAfter time.Duration, maxTurns int) []byte {
	var b bytes.Buffer
	if sleepAfter > 0 || maxTurns > 0 {
		b.WriteString("[serve]\n")
	}
	if sleepAfter > 0 {
		fmt.Fprintf(&b, "sleep_after = %q\n", sleepAfter.String())
	}
	if maxTurns > 0 {
		fmt.Fprintf(&b, "max_turns = %d\n", maxTurns)
	}
	if sleepAfter > 0 || maxTurns > 0 {
		b.WriteString("\n")
	}
	for _, a := range agents {
		fmt.Fprintf(&b, "[[agent]]\nname = %s\nhome = %s\nlisten = \"127.0.0.1:0\"\nkey_file = %s\n\n",
			strconv.Quote(a.Name), strconv.Quote(a.Home), strconv.Quote(a.KeyFile))
	}
	return b.Bytes()
}

// HarnessEnv is env, the measuring program's environment, less every LNK_
// variable (a tool or a model override of the person running it must not
// reach the agents), with the model proxy set.
func HarnessEnv(env []string, model string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LNK_") {
			out = append(out, kv)
		}
	}
	return append(out, "LNK_MODEL_PROXY="+model)
}

// linkUnit is one lnk-link-harness process serving one agent or several.
// agents is written by Start before the unit is handed out, and by Churn
// under mu.
type linkUnit struct {
	agent      Agent  // the first agent, whose scratch folder the unit uses
	file       string // the agents file, if served from one
	sleepAfter time.Duration
	maxTurns   int
	mu         sync.RWMutex
	agents     map[string]*linkAgent // grows by Churn, under mu
	all        []Agent               // as served, in order: as started, then as Churn left them, under mu
	later      chan string           // the listening lines printed after Start's, for Churn
	cmd        *exec.Cmd
	client     *http.Client
	profile    string
	log        string

	done    chan struct{} // closed once the process is waited for
	waitErr error         // set before done is closed
	stop    sync.Once
}

// linkAgent is one agent of a unit: its address and its key.
type linkAgent struct {
	base string // http://127.0.0.1:PORT
	key  string
}

// readListening reads the lines saying where each agent listens:
// `listening on 127.0.0.1:PORT` for one agent, `listening on
// 127.0.0.1:PORT for NAME` for each of several; then it lets the rest of
// the output go.
func (u *linkUnit) readListening(ctx context.Context, stdout io.Reader, agents []Agent) error {
	type line struct {
		s   string
		err error
	}
	got := make(chan line, len(agents))
	br := bufio.NewReaderSize(stdout, 512)
	u.later = make(chan string, maxLater)
	go func() {
		for range agents {
			s, err := br.ReadString('\n')
			got <- line{s, err}
			if err != nil {
				return
			}
		}
		// The lines of agents that join later, for Churn; any other line,
		// or one past what Churn has taken, goes.
		for {
			s, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(s, "listening on ") {
				select {
				case u.later <- s:
				default:
				}
			}
		}
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	for range agents {
		var l line
		select {
		case l = <-got:
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("drive: agent %s: no `listening on` line in %v%s", u.agent.Name, StartTimeout, u.logTail())
		}
		if l.err != nil {
			<-u.done
			return fmt.Errorf("drive: agent %s: the harness ended before listening (%v)%s", u.agent.Name, u.waitErr, u.logTail())
		}
		name, addr, err := parseListening(l.s, u.file != "")
		if err != nil {
			return fmt.Errorf("drive: agent %s: %w", u.agent.Name, err)
		}
		if name == "" {
			name = u.agent.Name
		}
		a, ok := u.agents[name]
		if !ok || a.base != "" {
			return fmt.Errorf("drive: agent %s: line %q names an agent not asked for, or twice", u.agent.Name, l.s)
		}
		a.base = "http://" + addr
	}
	return nil
}

// parseListening reads one `listening on ADDR` line, with ` for NAME` when
// named, and checks the address is on loopback.
func parseListening(s string, named bool) (name, addr string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "listening on ")
	if ok && named {
		addr, name, ok = strings.Cut(rest, " for ")
	} else {
		addr = rest
	}
	want := "`listening on 127.0.0.1:PORT`"
	if named {
		want = "`listening on 127.0.0.1:PORT for NAME`"
	}
	host, _, perr := net.SplitHostPort(addr)
	if !ok || perr != nil || named && name == "" {
		return "", "", fmt.Errorf("line %q, want %s", s, want)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", "", fmt.Errorf("listens on %s, not on loopback", addr)
	}
	return name, addr, nil
}

// logTail returns the end of the process's stderr, for an error.
func (u *linkUnit) logTail() string {
	b, err := os.ReadFile(u.log)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "; its stderr ends:\n" + strings.TrimSpace(string(b))
}

func (u *linkUnit) PID() int { return u.cmd.Process.Pid }

// CloseIdle implements IdleCloser.
func (u *linkUnit) CloseIdle() { u.client.CloseIdleConnections() }

func (u *linkUnit) CPUProfile() string { return u.profile }

// maxMetricsBytes bounds a metrics page read.
const maxMetricsBytes = 128 << 20

// maxReplyBytes bounds an answer read back.
const maxReplyBytes = 16 << 20

type messageBody struct {
	ID         string `json:"id"`
	Text       string `json:"text"`
	From       sender `json:"from"`
	Owner      bool   `json:"owner"`
	Connection string `json:"connection"`
}

type sender struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Send implements Unit.
func (u *linkUnit) Send(ctx context.Context, agent, thread string, m Message) (Reply, error) {
	body, err := json.Marshal(messageBody{
		ID: m.ID, Text: m.Text, From: sender{ID: "u1", Name: "Owner"}, Owner: true, Connection: "measure",
	})
	if err != nil {
		return Reply{}, err
	}
	u.mu.RLock()
	a, ok := u.agents[agent]
	u.mu.RUnlock()
	if !ok {
		return Reply{}, fmt.Errorf("drive: message %s: agent %s is not this unit's", m.ID, agent)
	}
	path := "/v1/agents/" + url.PathEscape(agent) + "/chats/" + url.PathEscape(thread) + "/messages"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	// A message is one message by its id, whoever sends it again: said
	// so, a kept connection the harness closed under the request (it
	// closes idle ones past its bound) is dialed again and the request
	// sent again, as for a GET.
	req.Header.Set("Idempotency-Key", m.ID)
	start := time.Now()
	resp, err := u.client.Do(req)
	if err != nil {
		return Reply{}, fmt.Errorf("drive: message %s to %s: %w", m.ID, agent, err)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	resp.Body.Close()
	latency := time.Since(start)
	if err != nil {
		return Reply{}, fmt.Errorf("drive: message %s to %s: reading the answer: %w", m.ID, agent, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Reply{}, fmt.Errorf("drive: message %s to %s: %w", m.ID, agent,
			&StatusError{Code: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Body: string(bytes.TrimSpace(b))})
	}
	var r struct {
		Thread string `json:"thread"`
		Seq    int64  `json:"seq"`
		Text   string `json:"text"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Reply{}, fmt.Errorf("drive: message %s to %s: the answer is not JSON: %w", m.ID, agent, err)
	}
	if r.Seq <= 0 {
		return Reply{}, fmt.Errorf("drive: message %s to %s: an answer without its seq: %s", m.ID, agent, b)
	}
	return Reply{Seq: r.Seq, Text: r.Text, Latency: latency}, nil
}

// Metrics implements MetricsReader.
func (u *linkUnit) Metrics(ctx context.Context) (Metrics, error) {
	page, err := u.MetricsPage(ctx)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(bytes.NewReader(page))
}

// MetricsPage returns the harness's /metrics page as it is written.
func (u *linkUnit) MetricsPage(ctx context.Context) ([]byte, error) {
	u.mu.RLock()
	base := u.agents[u.agent.Name].base
	u.mu.RUnlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("drive: metrics of %s: %w", u.agent.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("drive: metrics of %s: %s", u.agent.Name, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes+1))
	if err == nil && len(b) > maxMetricsBytes {
		err = fmt.Errorf("drive: metrics of %s: a page over %d bytes", u.agent.Name, maxMetricsBytes)
	}
	return b, err
}

// Stop implements Unit: SIGTERM, then SIGKILL if ctx ends first.
func (u *linkUnit) Stop(ctx context.Context) error {
	select {
	case <-u.done:
		return fmt.Errorf("drive: agent %s: the harness had ended (%v)%s", u.agent.Name, u.waitErr, u.logTail())
	default:
	}
	u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.done:
		if u.waitErr != nil {
			return fmt.Errorf("drive: agent %s: the harness ended with %v%s", u.agent.Name, u.waitErr, u.logTail())
		}
		return nil
	case <-ctx.Done():
		u.Kill()
		return fmt.Errorf("drive: agent %s: not stopped after SIGTERM: %w", u.agent.Name, ctx.Err())
	}
}

// Kill implements Unit.
func (u *linkUnit) Kill() {
	u.stop.Do(func() {
		select {
		case <-u.done:
			return
		default:
		}
		// The whole group: whatever the harness started (a tool's server)
		// goes with it.
		if syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL) != nil {
			u.cmd.Process.Kill()
		}
	})
	<-u.done
}
