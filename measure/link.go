package measure

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
	"strings"
	"sync"
	"syscall"
	"time"
)

// Link is Link Harness as measure drives it: one `lnk-link-harness serve`
// process per agent, messages over its HTTP API, its /metrics page, and the
// CPU profile it writes when stopped.
type Link struct {
	Program string // the lnk-link-harness program
	Profile bool   // have each process write a CPU profile
}

// Name implements Harness.
func (l *Link) Name() string { return "link" }

// startTimeout bounds how long a process may take to say where it listens.
const startTimeout = 30 * time.Second

// Start implements Harness: it starts one process serving the one agent.
// Several agents in one process (`serve --agents FILE`) come later; until
// then it returns ErrUnsupported for more than one.
func (l *Link) Start(ctx context.Context, agents []Agent) (Unit, error) {
	if len(agents) != 1 {
		return nil, fmt.Errorf("%w: link harness serves one agent per process in this version, asked for %d", ErrUnsupported, len(agents))
	}
	a := agents[0]
	args := []string{"serve", "--home", a.Home, "--listen", "127.0.0.1:0", "--key-file", a.KeyFile}
	u := &linkUnit{agent: a, done: make(chan struct{})}
	if l.Profile {
		u.profile = filepath.Join(a.Scratch, "cpu.pprof")
		args = append(args, "--cpuprofile", u.profile)
	}
	logPath := filepath.Join(a.Scratch, "stderr.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("measure: agent %s: %w", a.Name, err)
	}
	defer logf.Close()
	u.log = logPath
	cmd := exec.Command(l.Program, args...)
	cmd.Env = harnessEnv(os.Environ(), a.Model)
	cmd.Dir = a.Scratch
	cmd.Stderr = logf
	// Its own process group, so a ^C at the terminal reaches measure alone,
	// which stops it in order; and killed if measure dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("measure: agent %s: %w", a.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("measure: starting %s for agent %s: %w", l.Program, a.Name, err)
	}
	u.cmd = cmd
	go func() {
		u.waitErr = cmd.Wait()
		close(u.done)
	}()
	addr, err := u.readListening(ctx, stdout)
	if err != nil {
		u.Kill()
		return nil, err
	}
	u.base = "http://" + addr
	u.client = &http.Client{
		// One connection per message, as Link's bridge opens them; the
		// connection's cost is part of a message's.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	return u, nil
}

// harnessEnv is measure's environment less every LNK_ variable (a tool or
// a model override of the person running it must not reach the agents),
// with the model proxy set.
func harnessEnv(env []string, model string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LNK_") {
			out = append(out, kv)
		}
	}
	return append(out, "LNK_MODEL_PROXY="+model)
}

// linkUnit is one lnk-link-harness process serving one agent.
type linkUnit struct {
	agent   Agent
	cmd     *exec.Cmd
	base    string // http://127.0.0.1:PORT
	client  *http.Client
	profile string
	log     string

	done    chan struct{} // closed once the process is waited for
	waitErr error         // set before done is closed
	stop    sync.Once
}

// readListening reads the first line, `listening on 127.0.0.1:PORT`, and
// then lets the rest of the output go.
func (u *linkUnit) readListening(ctx context.Context, stdout io.Reader) (string, error) {
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	br := bufio.NewReaderSize(stdout, 512)
	go func() {
		s, err := br.ReadString('\n')
		got <- line{s, err}
		if err == nil {
			io.Copy(io.Discard, br)
		}
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var l line
	select {
	case l = <-got:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timer.C:
		return "", fmt.Errorf("measure: agent %s: no `listening on` line in %v%s", u.agent.Name, startTimeout, u.logTail())
	}
	if l.err != nil {
		<-u.done
		return "", fmt.Errorf("measure: agent %s: the harness ended before listening (%v)%s", u.agent.Name, u.waitErr, u.logTail())
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(l.s), "listening on ")
	host, _, err := net.SplitHostPort(addr)
	if !ok || err != nil {
		return "", fmt.Errorf("measure: agent %s: first line %q, want `listening on 127.0.0.1:PORT`", u.agent.Name, l.s)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("measure: agent %s: listens on %s, not on loopback", u.agent.Name, addr)
	}
	return addr, nil
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

func (u *linkUnit) CPUProfile() string { return u.profile }

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
	path := "/v1/agents/" + url.PathEscape(agent) + "/chats/" + url.PathEscape(thread) + "/messages"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.base+path, bytes.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+u.agent.Key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := u.client.Do(req)
	if err != nil {
		return Reply{}, fmt.Errorf("measure: message %s to %s: %w", m.ID, agent, err)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	resp.Body.Close()
	latency := time.Since(start)
	if err != nil {
		return Reply{}, fmt.Errorf("measure: message %s to %s: reading the answer: %w", m.ID, agent, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Reply{}, fmt.Errorf("measure: message %s to %s: %s: %s", m.ID, agent, resp.Status, bytes.TrimSpace(b))
	}
	var r struct {
		Thread string `json:"thread"`
		Seq    int64  `json:"seq"`
		Text   string `json:"text"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Reply{}, fmt.Errorf("measure: message %s to %s: the answer is not JSON: %w", m.ID, agent, err)
	}
	if r.Seq <= 0 {
		return Reply{}, fmt.Errorf("measure: message %s to %s: an answer without its seq: %s", m.ID, agent, b)
	}
	return Reply{Seq: r.Seq, Text: r.Text, Latency: latency}, nil
}

// Metrics implements MetricsReader.
func (u *linkUnit) Metrics(ctx context.Context) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("measure: metrics of %s: %w", u.agent.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("measure: metrics of %s: %s", u.agent.Name, resp.Status)
	}
	return ParseMetrics(io.LimitReader(resp.Body, 16<<20))
}

// Stop implements Unit: SIGTERM, then SIGKILL if ctx ends first.
func (u *linkUnit) Stop(ctx context.Context) error {
	select {
	case <-u.done:
		return fmt.Errorf("measure: agent %s: the harness had ended (%v)%s", u.agent.Name, u.waitErr, u.logTail())
	default:
	}
	u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.done:
		if u.waitErr != nil {
			return fmt.Errorf("measure: agent %s: the harness ended with %v%s", u.agent.Name, u.waitErr, u.logTail())
		}
		return nil
	case <-ctx.Done():
		u.Kill()
		return fmt.Errorf("measure: agent %s: not stopped after SIGTERM: %w", u.agent.Name, ctx.Err())
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
